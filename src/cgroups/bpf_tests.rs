//! bpf/group_share.bpf.h, run in the host kernel through BPF_PROG_TEST_RUN
//! of bpf/cgroup_test.bpf.c: each task's weight from its cgroups, against
//! shares worked out by hand from kernel/sched/fair.c's rules (a cgroup is
//! one entity of its cpu.weight among its parent's runnable entities, and
//! its own entities share what it gets by their weights), then random
//! hierarchies against the same rule in floating point.
//! Needs CAP_BPF and CAP_PERFMON (skipped without, src/bpf_test_progs.rs);
//! it does not need sched_ext.

use proptest::prelude::*;

use crate::bpf_intf;
use crate::bpf_test_progs::{self, cgroup as skel};

/// Nice 0's and nice 5's weights (sched_prio_to_weight[]).
const NICE_0: u32 = 1024;
const NICE_5: u32 = 335;
/// cpu.weight 100, 300, 1000 in the fair class's units (x 1024 / 100).
const W100: u64 = 1024;
const W300: u64 = 3072;
const W1000: u64 = 10240;

fn program() -> Option<skel::CgroupTestSkel<'static>> {
    bpf_test_progs::load(skel::CgroupTestSkelBuilder::default())
}

fn blank() -> bpf_intf::cadence_share_test {
    // SAFETY: plain-data struct from bindgen; all zeroes is valid.
    unsafe { std::mem::zeroed() }
}

fn run_ctx(s: &skel::CgroupTestSkel<'static>, ctx: &mut bpf_intf::cadence_share_test) {
    bpf_intf::test_run_in_place(&s.progs.share_run, ctx);
    assert_ne!(ctx.share_weight, 0, "share_run could not read its input");
}

/// A task of nice weight @task in the chain @levels, its own cgroup first:
/// (the cgroup's weight, the weight of its runnable members). Its weight
/// among all tasks and the inverse.
fn share(s: &skel::CgroupTestSkel<'static>, task: u32, levels: &[(u64, i64)]) -> (u32, u32) {
    let mut ctx = blank();
    ctx.task_weight = task;
    ctx.nr_levels = levels.len() as u32;
    for (i, &(w, a)) in levels.iter().enumerate() {
        ctx.weight[i] = w;
        ctx.active[i] = a;
    }
    run_ctx(s, &mut ctx);
    (ctx.share_weight, ctx.share_wmult)
}

/// A cgroup of @weight that contributed @contributed, its active weight
/// going @old -> @new: its parent's change and its contribution after.
fn activity(
    s: &skel::CgroupTestSkel<'static>,
    old: i64,
    new: i64,
    weight: u64,
    contributed: u64,
) -> (i64, u64) {
    let mut ctx = blank();
    ctx.task_weight = NICE_0;
    ctx.act_old = old;
    ctx.act_new = new;
    ctx.act_weight = weight;
    ctx.act_contributed = contributed;
    run_ctx(s, &mut ctx);
    (ctx.act_parent_delta, ctx.act_contributed_after)
}

/// Each group's share of the CPUs, from its tasks' weights and counts.
fn shares(groups: &[(u32, u32)]) -> Vec<f64> {
    let total: f64 = groups.iter().map(|&(w, n)| f64::from(w * n)).sum();
    groups
        .iter()
        .map(|&(w, n)| f64::from(w * n) / total)
        .collect()
}

#[test]
fn flat_groups_share_by_cpu_weight() {
    let Some(s) = program() else { return };
    // cpu.weight 100 and 300, four nice-0 hogs each (what the VM case
    // runs): each cgroup's runnable weight is 4 x 1024. A task of the first
    // gets 1024/4096 of 1024, of the second 1024/4096 of 3072.
    let (light, _) = share(&s, NICE_0, &[(W100, 4 * 1024)]);
    let (heavy, _) = share(&s, NICE_0, &[(W300, 4 * 1024)]);
    assert_eq!((light, heavy), (256, 768));
    // fair.c: the two group entities weigh 1024 and 3072 on the root: 75%.
    let s2 = shares(&[(light, 4), (heavy, 4)]);
    assert!((s2[1] - 0.75).abs() < 1e-12, "{s2:?}");
    // One task alone in a cpu.weight-100 cgroup weighs as a nice-0 task of
    // the root cgroup: the group's entity and the task's are the same weight.
    assert_eq!(share(&s, NICE_0, &[(W100, 1024)]).0, 1024);
}

#[test]
fn nested_groups_share_level_by_level() {
    let Some(s) = program() else { return };
    // p (100) holding x (100) and y (100), beside q (100); four hogs in
    // each of x, y, q. Root: p and q, 1024 each. In p: x and y, 1024 each.
    let (x, _) = share(&s, NICE_0, &[(W100, 4 * 1024), (W100, 2 * 1024)]);
    let (q, _) = share(&s, NICE_0, &[(W100, 4 * 1024)]);
    // x's tasks: 1024/4096 of x, x 1024/2048 of p, p's 1024: 128; q's 256.
    assert_eq!((x, q), (128, 256));
    let s3 = shares(&[(x, 4), (x, 4), (q, 4)]);
    assert_eq!(s3, vec![0.25, 0.25, 0.5]);
    // y idle: p holds only x, and x's tasks get all of p's share.
    let (x_alone, _) = share(&s, NICE_0, &[(W100, 4 * 1024), (W100, 1024)]);
    assert_eq!(x_alone, 256);
}

#[test]
fn an_idle_group_takes_nothing_from_the_running_ones() {
    let Some(s) = program() else { return };
    // a (100) and b (100) run four hogs each, c (1000) has nothing
    // runnable. No task's weight reads its siblings: at the root, tasks
    // meet by their own weights, and c has no task there. Every weight is
    // the same as without c.
    let (a, _) = share(&s, NICE_0, &[(W100, 4 * 1024)]);
    assert_eq!(a, 256);
    assert_eq!(shares(&[(a, 4), (a, 4)]), vec![0.5, 0.5]);
    // Below the root an idle sibling is simply not in its parent's
    // runnable weight: a cgroup of 1000 beside it, holding p's other child
    // only while it runs (y above). Once c runs a hog, it weighs 1000/100.
    let (c, _) = share(&s, NICE_0, &[(W1000, 1024)]);
    assert_eq!(c, 10240);
}

#[test]
fn the_nice_ratio_inside_a_group_is_kept() {
    let Some(s) = program() else { return };
    // nice 0 and nice 5 alone in a cgroup of 100: runnable weight 1359.
    // 1024 x 1024 / 1359 = 771.6 and 335 x 1024 / 1359 = 252.4, rounded.
    let (n0, m0) = share(&s, NICE_0, &[(W100, 1359)]);
    let (n5, _) = share(&s, NICE_5, &[(W100, 1359)]);
    assert_eq!((n0, n5), (772, 252));
    let ratio = f64::from(n0) / f64::from(n5);
    assert!((ratio - 1024.0 / 335.0).abs() < 0.01, "{ratio}");
    // The inverse as fair.c's __update_inv_weight(): WMULT_CONST / w.
    assert_eq!(m0, u32::MAX / 772);
}

#[test]
fn the_root_cgroup_and_racing_reads_keep_the_nice_weight() {
    let Some(s) = program() else { return };
    // A task of the root cgroup: no level, its nice weight as it is.
    assert_eq!(share(&s, NICE_5, &[]), (NICE_5, u32::MAX / NICE_5));
    // A racing update shows the cgroup's runnable weight below the task's
    // own (0, or negative for a moment): it counts as the task alone.
    assert_eq!(share(&s, NICE_0, &[(W100, 0)]).0, 1024);
    assert_eq!(share(&s, NICE_0, &[(W100, -2048)]).0, 1024);
    // However many tasks share a cgroup of cpu.weight 1, none weighs less
    // than MIN_SHARES (2).
    assert_eq!(share(&s, NICE_0, &[(10, 1000 * 1024)]).0, 2);
}

#[test]
fn a_group_enters_and_leaves_its_parent_at_zero_crossings() {
    let Some(s) = program() else { return };
    // First runnable task: the cgroup adds its weight to its parent's.
    assert_eq!(activity(&s, 0, 1024, W300, 0), (3072, 3072));
    // More tasks, or fewer but not none: the parent sees nothing.
    assert_eq!(activity(&s, 1024, 2048, W300, 3072), (0, 3072));
    assert_eq!(activity(&s, 2048, 1024, W300, 3072), (0, 3072));
    // Last task gone: it takes back what it added, even if its weight
    // changed since (the change itself is group_set_weight()'s).
    assert_eq!(activity(&s, 1024, 0, W1000, 3072), (-3072, 0));
    // A child's leave that overtook its own enter: below zero and back,
    // no crossing either way.
    assert_eq!(activity(&s, 0, -1024, W300, 0), (0, 0));
    assert_eq!(activity(&s, -1024, 0, W300, 0), (0, 0));
    // From below zero straight above it: a crossing.
    assert_eq!(activity(&s, -1024, 1024, W300, 0), (3072, 3072));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Random hierarchies: the task's weight is w times, at each level, the
    /// cgroup's weight over its runnable members' (at least the member
    /// itself), as fair.c shares, to within the rounding of each level.
    #[test]
    fn random_hierarchies_match_the_product_of_ratios(
        task in prop::sample::select(vec![15u32, 335, 1024, 3121, 88761]),
        levels in prop::collection::vec((1u64..=10_000, 0u64..=40), 1..=16),
    ) {
        let Some(s) = program() else { return Ok(()) };
        let mut chain = Vec::new();
        let mut member = u64::from(task);
        let mut exact = f64::from(task);
        for &(cpu_weight, others) in &levels {
            let weight = (cpu_weight * 1024 + 50) / 100;
            // Its runnable members: the task's line and `others` more
            // nice-0 members.
            let active = member + others * 1024;
            exact *= weight as f64 / active as f64;
            chain.push((weight, active as i64));
            member = weight;
        }
        let (got, _) = share(&s, task, &chain);
        let want = exact.round().max(2.0);
        // Each level truncates at 2^-10 of a unit; 16 levels at most.
        let slack = 1.0 + want * chain.len() as f64 / 1024.0;
        prop_assert!((f64::from(got) - want).abs() <= slack,
            "got {got}, want {want} for {task} in {chain:?}");
    }
}

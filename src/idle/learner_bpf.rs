//! The BPF idle learner run outside the scheduler: bpf/idle_replay.bpf.c's
//! SEC("syscall") program through BPF_PROG_TEST_RUN, one CPU's periods at a
//! time, in order. `idle replay` and the host tests use it.

use std::mem::MaybeUninit;

use anyhow::{Context, Result, bail};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};

use super::period::{Entry, Miss, Scores, Tick};
use super::table::{StatesNs, Table};
use crate::bpf_intf;

/// bpf/idle_replay.bpf.c linked with the scheduler's bpf/idle_learn.bpf.c.
mod skel {
    linked_skel!("idle_replay", IdleReplaySkel, IdleReplaySkelBuilder);
}

/// One idle period as the learner takes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Period {
    pub duration_ns: u64,
    /// Time to the next timer, KTIME_MAX (i64::MAX) if not known.
    pub sleep_length_ns: u64,
    /// The state the kernel entered, -1 if not known.
    pub kernel_state: i32,
    /// The random number the random picks use.
    pub rand: u32,
    pub tick: Tick,
    /// The PM QoS limit at selection, ns; ENDLESS: none.
    pub latency_req_ns: u64,
    /// The kernel's verdict on the period.
    pub kernel_miss: Miss,
}

const CHUNK: usize = bpf_intf::cadence_idle_consts_CADENCE_IDLE_REPLAY_PERIODS as usize;

/// The loaded program.
pub struct BpfLearner {
    skel: skel::IdleReplaySkel<'static>,
}

/// One CPU's run: where its table and scores ended, and each period's choices.
pub struct Run {
    // The tests read the table; `idle replay` the scores and the entries.
    #[cfg_attr(not(test), allow(dead_code))]
    pub table: Table,
    pub scores: Scores,
    pub entries: Vec<Entry>,
}

impl BpfLearner {
    /// Loads the program (needs CAP_BPF and CAP_PERFMON, or root).
    pub fn load() -> Result<BpfLearner> {
        let object = Box::leak(Box::new(MaybeUninit::uninit()));
        let open = skel::IdleReplaySkelBuilder::default()
            .open(object)
            .context("opening the BPF idle learner")?;
        let skel = open
            .load()
            .context("loading the BPF idle learner (it needs root: CAP_BPF and CAP_PERFMON)")?;
        Ok(BpfLearner { skel })
    }

    /// Runs @periods from @table under @pol, adding to @scores.
    pub fn run(
        &self,
        pol: &bpf_intf::cadence_policy,
        states: &StatesNs,
        table: &Table,
        scores: &Scores,
        kernel_indices: bool,
        periods: &[Period],
    ) -> Result<Run> {
        // SAFETY: a bindgen struct of integers: all zeroes is a valid value.
        let mut ctx: Box<bpf_intf::cadence_idle_replay> = Box::new(unsafe { std::mem::zeroed() });
        ctx.policy = *pol;
        ctx.states = states.to_bpf();
        ctx.table = table.to_bpf();
        ctx.scores = scores.to_bpf();
        ctx.kernel_indices = kernel_indices as u32;
        let mut entries = Vec::with_capacity(periods.len());
        for chunk in periods.chunks(CHUNK) {
            ctx.nr = chunk.len() as u32;
            for (slot, p) in ctx.periods.iter_mut().zip(chunk) {
                slot.duration_ns = p.duration_ns;
                slot.sleep_length_ns = p.sleep_length_ns;
                slot.kernel_state = p.kernel_state;
                slot.rand = p.rand;
                slot.tick = p.tick.to_bpf();
                slot.latency_req_ns = p.latency_req_ns;
                slot.kernel_miss = p.kernel_miss.to_bpf();
            }
            let input = bpf_intf::test_run_input(&mut *ctx);
            self.skel
                .progs
                .idle_replay
                .test_run(input)
                .context("BPF_PROG_TEST_RUN of idle_replay")?;
            if ctx.error != 0 {
                bail!("idle_replay refused its input ({})", ctx.error);
            }
            entries.extend(ctx.entries[..chunk.len()].iter().map(|e| Entry {
                teo: e.teo,
                per_choice: e.per_choice,
                seed: e.seed,
                kernel: e.kernel,
                rand: e.rand,
                sleep_length_ns: e.sleep_length_ns,
                sleep_length_used: e.sleep_length_used != 0,
                entered: e.entered,
                tick: Tick::from_bpf(&e.tick),
                latency_req_ns: e.latency_req_ns,
                kernel_miss: Miss::from_bpf(e.kernel_miss),
            }));
        }
        Ok(Run {
            table: Table::from_bpf(&ctx.table),
            scores: Scores::from_bpf(&ctx.scores),
            entries,
        })
    }
}

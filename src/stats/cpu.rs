//! One CPU's event counters, as the BPF `cpu_stats` map holds them
//! (struct cadence_cpu_stats in bpf/intf.h), plus the generation of the
//! policy copy that CPU uses. The counter list below is the one place that
//! names them: the struct, its scx_stats metadata, the sums, the deltas and
//! the OpenMetrics names all come from it.

use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};

use crate::bpf_intf;

macro_rules! cpu_metrics {
    ($($name:ident: $desc:tt,)*) => {
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
        pub struct CpuMetrics {
            #[stat(desc = "Generation of the policy copy in use (the total holds the oldest any CPU uses)")]
            pub policy_generation: u64,
            $(#[stat(desc = $desc)] pub $name: u64,)*
        }

        impl CpuMetrics {
            /// Every counter's name and description, in BPF field order.
            pub const COUNTERS: &[(&str, &str)] = &[$((stringify!($name), $desc)),*];

            /// One CPU's counters from its copy of the BPF map value.
            pub fn from_bpf(raw: &bpf_intf::cadence_cpu_stats, policy_generation: u64) -> Self {
                Self { policy_generation, $($name: raw.$name,)* }
            }

            /// The counters' values, in the order of COUNTERS.
            pub fn values(&self) -> Vec<u64> {
                vec![$(self.$name),*]
            }

            /// Adds @other's counters; keeps the older policy generation.
            pub fn add(&mut self, other: &Self) {
                $(self.$name = self.$name.wrapping_add(other.$name);)*
                self.policy_generation = self.policy_generation.min(other.policy_generation);
            }

            /// Growth since @prev. Counters restart from zero when the
            /// scheduler re-attaches, so one smaller than before counts from
            /// zero; the generation is taken as it is now.
            pub fn delta(&self, prev: &Self) -> Self {
                Self {
                    policy_generation: self.policy_generation,
                    $($name: self.$name.checked_sub(prev.$name).unwrap_or(self.$name),)*
                }
            }
        }
    };
}

cpu_metrics! {
    select_prev_core: "Wake-ups placed on the previous CPU, its whole core idle",
    select_llc_core: "Wake-ups placed on an idle core in the previous CPU's LLC",
    select_any_core: "Wake-ups placed on an idle core in another LLC",
    select_prev_cpu: "Wake-ups placed on the previous CPU, its sibling busy",
    select_llc_cpu: "Wake-ups placed on an idle CPU in the previous CPU's LLC",
    select_any_cpu: "Wake-ups placed on an idle CPU in another LLC",
    select_busy: "Wake-ups that found no idle CPU and were queued",
    enq_pinned: "Enqueues to a per-CPU DSQ (task can run on one CPU only)",
    enq_idle: "Enqueues sent straight to an idle CPU",
    enq_llc: "Enqueues to the LLC's shared vtime DSQ",
    dispatch_cpu: "Dispatches from the CPU's own DSQ",
    dispatch_llc: "Dispatches from the CPU's LLC DSQ",
    dispatch_steal: "Dispatches stolen from another LLC's DSQ",
    dispatch_keep: "Slice refills for a task that stayed first by virtual deadline",
    tick_preempt: "Slices cut short by the tick because others were waiting",
    policy_refresh: "Times this CPU refreshed its policy copy after a change",
    place_prev_small: "Small-core order: placed on the previous CPU, its whole small core idle",
    place_idle_big: "Small-core order: placed in a fully idle big core of the LLC",
    place_idle_small: "Small-core order: placed in a fully idle small core of a busy big core",
    place_near_small: "Small-core order: an idle thread of the previous CPU's small core",
    place_near_big: "Small-core order: an idle thread of another small core of the previous big core",
    place_near_llc: "Small-core order: an idle thread elsewhere in the previous CPU's LLC",
    place_any: "Small-core order: any idle CPU (another LLC)",
    place_busy: "Small-core order: no idle CPU the task may use",
    enq_lag_floor: "Wake-ups or enqueues that lifted a task (mostly one that slept) to a lag behind its queue's frontier",
    dispatch_balance: "Dispatches taken by a busy CPU from an LLC with more waiting per CPU",
    enq_kick_idle: "Idle CPUs woken for a task queued in an LLC DSQ",
    enq_wait_cap: "Leads cut so that a task waits at most 1 s for its turn (mostly low-weight tasks under heavy load)",
    wake_preempt: "Running tasks preempted for a waking task with an earlier virtual deadline",
    wake_parity: "Wake-ups with an earlier deadline that left the running task alone: it had not run its minimum slice",
    wake_sync: "Sync wake-ups placed on the waker's CPU",
    wake_overtake: "Wake-ups queued ahead of their queue's head by an earlier virtual deadline",
    move_thread: "Tasks that started running on another thread of the small core they last ran on",
    move_small: "Tasks that started running on another small core of the big core they last ran on",
    move_big: "Tasks that started running on another big core than the one they last ran on",
    move_wake: "Moves across small or big cores made by wake-up placement (select_cpu)",
    move_requeue: "Moves across small or big cores made by enqueue sending a task that did not wake (slice end, preemption) to an idle CPU",
    move_queue: "Moves across small or big cores of tasks taken from a queue by another CPU",
    dispatch_defer: "Slice refills for a task that would have yielded to its LLC queue's head, left to an idle CPU kicked to take it",
    enq_stay: "Running tasks that gave up their CPU and were queued on it to wait for it, not moved (placement.hold)",
    dispatch_rebalance: "Slice ends at which a running task was not refilled so that it moves: a lasting imbalance (placement.hold)",
    dispatch_make_room: "Slice ends at which a running task that may run elsewhere gave its CPU to a CPU-bound task pinned there and left for an idle CPU",
    dispatch_starved: "Tasks taken from a CPU's own queue ahead of its order because they had waited 250 jiffies (1 s at HZ=250)",
    dispatch_starved_llc: "Tasks taken from an LLC's queue ahead of its order because they had waited 250 jiffies (the one that waited longest, one per look)",
    dispatch_unhold: "Tasks holding their CPU (placement.hold) sent back to their LLC queue, where every CPU sees them, because a lasting task of like util per weight went first on that CPU",
    tick_rcu_reader: "Ticks that left the running task's slice alone (refilled if used up) because it was inside an RCU read-side critical section",
    tick_wake_preempt: "Slices the tick cut because a waiting task should now preempt the running one (a wake-up held back by its minimum slice or earlier deadline)",
    wake_preempt_spent: "Of wake_preempt, running tasks preempted although their deadline was earlier: they had run past their share or used up their slice",
    wake_sync_yield: "Sync wake-ups that found no CPU and preempted nobody: their waker is about to free one",
    wake_parity_kick: "CPUs kicked when the minimum slice that held a wake-up back ended, because a waiting task then preempts",
    wake_parity_fired: "Parity timers that fired to ask again whether a held-back wake-up preempts (wake_parity_kick: those that kicked)",
    slice_timer_kick: "Slices the slice timer ended on time, because others waited (latency.slice_timer_us)",
    slice_timer_rcu: "Slice timers that left a used-up slice to the tick because the task was inside an RCU read-side critical section",
    yield_forfeit: "sched_yield() calls that ended the yielder's slice, others waiting for its CPU (an eligible yielder also forfeits the rest of its request)",
    cgroup_untracked: "cgroups created past the cgroups map's 16384 entries: their tasks weigh as in the root cgroup",
}

/// One line of counters, grouped as `--stats` prints them.
pub fn format_counters(m: &CpuMetrics) -> String {
    format!(
        "wake: prev-core {} llc-core {} core {} prev {} llc {} any {} busy {} | place: prev-small {} idle-big {} idle-small {} near-small {} near-big {} near-llc {} any {} busy {} | enq: pinned {} idle {} llc {} stay {} lag-floor {} wait-cap {} kick {} | dsp: own {} llc {} steal {} balance {} keep {} defer {} rebalance {} make-room {} starved {} starved-llc {} unhold {} | preempt {} rcu-reader {} | latency: preempt {} spent {} parity {} parity-kick {} parity-fired {} slice-kick {} slice-rcu {} yield {} tick {} sync {} sync-yield {} overtake {} | moves: thread {} small {} big {} by wake {} requeue {} queue {} | policy gen {} refresh {}",
        m.select_prev_core,
        m.select_llc_core,
        m.select_any_core,
        m.select_prev_cpu,
        m.select_llc_cpu,
        m.select_any_cpu,
        m.select_busy,
        m.place_prev_small,
        m.place_idle_big,
        m.place_idle_small,
        m.place_near_small,
        m.place_near_big,
        m.place_near_llc,
        m.place_any,
        m.place_busy,
        m.enq_pinned,
        m.enq_idle,
        m.enq_llc,
        m.enq_stay,
        m.enq_lag_floor,
        m.enq_wait_cap,
        m.enq_kick_idle,
        m.dispatch_cpu,
        m.dispatch_llc,
        m.dispatch_steal,
        m.dispatch_balance,
        m.dispatch_keep,
        m.dispatch_defer,
        m.dispatch_rebalance,
        m.dispatch_make_room,
        m.dispatch_starved,
        m.dispatch_starved_llc,
        m.dispatch_unhold,
        m.tick_preempt,
        m.tick_rcu_reader,
        m.wake_preempt,
        m.wake_preempt_spent,
        m.wake_parity,
        m.wake_parity_kick,
        m.wake_parity_fired,
        m.slice_timer_kick,
        m.slice_timer_rcu,
        m.yield_forfeit,
        m.tick_wake_preempt,
        m.wake_sync,
        m.wake_sync_yield,
        m.wake_overtake,
        m.move_thread,
        m.move_small,
        m.move_big,
        m.move_wake,
        m.move_requeue,
        m.move_queue,
        m.policy_generation,
        m.policy_refresh,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map value whose i-th field holds 1000 + i, as the kernel lays it out.
    fn numbered_raw() -> Vec<u8> {
        (0..CpuMetrics::COUNTERS.len() as u64)
            .flat_map(|i| (1000 + i).to_ne_bytes())
            .collect()
    }

    #[test]
    fn every_bpf_field_lands_in_its_named_counter() {
        let size = std::mem::size_of::<bpf_intf::cadence_cpu_stats>();
        assert_eq!(size, 8 * CpuMetrics::COUNTERS.len(), "a counter is missing");
        let m = CpuMetrics::from_bpf(
            &bpf_intf::from_bytes::<bpf_intf::cadence_cpu_stats>(&numbered_raw()).unwrap(),
            7,
        );
        let json = serde_json::to_value(&m).unwrap();
        for (i, (name, _)) in CpuMetrics::COUNTERS.iter().enumerate() {
            assert_eq!(json[name], 1000 + i as u64, "{name}");
        }
        assert_eq!(json["policy_generation"], 7);
        assert_eq!(m.values()[2], 1002);
    }

    #[test]
    fn short_map_value_is_refused() {
        assert!(bpf_intf::from_bytes::<bpf_intf::cadence_cpu_stats>(&[0u8; 8]).is_none());
    }

    #[test]
    fn add_sums_counters_and_keeps_the_oldest_generation() {
        let raw = bpf_intf::from_bytes::<bpf_intf::cadence_cpu_stats>(&numbered_raw()).unwrap();
        let mut a = CpuMetrics::from_bpf(&raw, 5);
        a.add(&CpuMetrics::from_bpf(&raw, 3));
        assert_eq!(a.select_prev_core, 2000);
        assert_eq!(a.policy_refresh, 2 * (1000 + 15));
        assert_eq!(a.policy_generation, 3);
    }

    #[test]
    fn delta_counts_growth_and_restarts_from_zero() {
        let raw = bpf_intf::from_bytes::<bpf_intf::cadence_cpu_stats>(&numbered_raw()).unwrap();
        let before = CpuMetrics::from_bpf(&raw, 1);
        let mut after = before.clone();
        after.enq_llc += 7;
        after.policy_generation = 4;
        let d = after.delta(&before);
        assert_eq!((d.enq_llc, d.enq_idle, d.policy_generation), (7, 0, 4));
        // After hotplug the BPF maps are new and the counters start over.
        let restarted = CpuMetrics {
            dispatch_llc: 20,
            ..Default::default()
        };
        assert_eq!(restarted.delta(&before).dispatch_llc, 20);
    }
}

//! kernel/sched/fair.c's virtual deadline and eligibility, restated from
//! its source for the host tests, with 128-bit arithmetic where the kernel
//! splits products (mul_u64_u32_shr(), the __int128 of vruntime_eligible()),
//! so that the BPF code's 64-bit splitting is checked, not copied.

/// sched_prio_to_weight[] (kernel/sched/core.c), by nice + 20.
pub const WEIGHTS: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// sched_prio_to_wmult[] (kernel/sched/core.c), 2^32 / weight as the
/// kernel rounds it, by nice + 20.
pub const WMULTS: [u32; 40] = [
    48388, 59856, 76040, 92818, 118348, 147320, 184698, 229616, 287308, 360437, 449829, 563644,
    704093, 875809, 1099582, 1376151, 1717300, 2157191, 2708050, 3363326, 4194304, 5237765,
    6557202, 8165337, 10153587, 12820798, 15790321, 19976592, 24970740, 31350126, 39045157,
    49367440, 61356676, 76695844, 95443717, 119304647, 148102320, 186737708, 238609294, 286331153,
];

/// WEIGHT_IDLEPRIO and WMULT_IDLEPRIO (kernel/sched/sched.h): SCHED_IDLE.
pub const IDLE_WEIGHT: u32 = 3;
pub const IDLE_WMULT: u32 = 1431655765;

/// NICE_0_LOAD after scale_load_down().
const NICE_0_LOAD: u64 = 1024;

/// calc_delta_fair(): @delta in virtual time for an entity of @weight with
/// inverse weight @wmult, i.e. __calc_delta(delta, NICE_0_LOAD, &se->load).
pub fn calc_delta_fair(delta: u64, weight: u32, wmult: u32) -> u64 {
    if u64::from(weight) == NICE_0_LOAD {
        return delta;
    }
    // fact = scale_load_down(NICE_0_LOAD) fits 32 bits: no first shift.
    let mut shift = 32u32;
    let mut fact = NICE_0_LOAD * u64::from(wmult);
    let hi = (fact >> 32) as u32;
    if hi != 0 {
        let fs = 32 - hi.leading_zeros();
        shift -= fs;
        fact >>= fs;
    }
    ((u128::from(delta) * u128::from(fact)) >> shift) as u64
}

/// update_deadline(): vd_i = v_i + calc_delta_fair(slice).
pub fn update_deadline(vruntime: u64, slice: u64, weight: u32, wmult: u32) -> u64 {
    vruntime.wrapping_add(calc_delta_fair(slice, weight, wmult))
}

/// A cfs_rq's entities as vruntime_eligible() sees them: their vruntimes
/// and weights (scale_load_down'd), keyed against zero_vruntime.
pub struct CfsRq {
    pub zero_vruntime: u64,
    pub entities: Vec<(u64, u32)>,
}

impl CfsRq {
    /// \Sum (v_i - v0) * w_i and \Sum w_i: sum_w_vruntime and sum_weight
    /// (the running entity included, as vruntime_eligible() adds curr).
    fn sums(&self) -> (i128, i128) {
        let mut avg = 0i128;
        let mut load = 0i128;
        for &(v, w) in &self.entities {
            avg += i128::from(v.wrapping_sub(self.zero_vruntime) as i64) * i128::from(w);
            load += i128::from(w);
        }
        (avg, load)
    }

    /// vruntime_eligible(): lag >= 0, without dividing:
    /// \Sum (v_j - v0) w_j >= (v - v0) \Sum w_j.
    pub fn vruntime_eligible(&self, vruntime: u64) -> bool {
        let (avg, load) = self.sums();
        let key = i128::from(vruntime.wrapping_sub(self.zero_vruntime) as i64);
        avg >= key * load
    }

    /// avg_vruntime(): V, the division rounded toward minus infinity ("sign
    /// flips effective floor / ceiling"), so that an entity at V is eligible.
    pub fn avg_vruntime(&self) -> u64 {
        let (mut avg, load) = self.sums();
        if load != 0 {
            if avg < 0 {
                avg -= load - 1;
            }
            avg /= load;
        }
        self.zero_vruntime.wrapping_add(avg as i64 as u64)
    }
}

/// enum cadence_preempt_verdict, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Yes,
    NoCurr,
    Ineligible,
    Later,
    Parity,
}

/// What the wake-up preemption rule looks at: the waking task and the
/// task running on the target CPU. Deadlines are relative to the frontier.
#[derive(Clone, Copy, Debug)]
pub struct PreemptAt {
    /// The CPU runs one of our tasks.
    pub curr_active: bool,
    pub wake_eligible: bool,
    pub curr_eligible: bool,
    /// The running task's vruntime reached the deadline of its slice.
    pub curr_done: bool,
    pub wake_rel_deadline: i64,
    pub curr_rel_deadline: i64,
    /// How long the running task has run of its current request (ns),
    /// across preemptions (`run_since_request()`; `parity_credit()` in
    /// bpf/deadline.bpf.h).
    pub curr_ran_ns: u64,
    /// The minimum slice (ns): run-to-parity protection.
    pub min_run_ns: u64,
}

/// The wake-up preemption rule, from EEVDF: check_preempt_wakeup_fair()
/// preempts when __pick_eevdf() would pick the waking entity. That one
/// must be eligible. A running entity that is not eligible is dropped from
/// the pick before deadlines are compared (`curr = NULL`), so its deadline
/// does not count; an eligible one keeps the CPU when its deadline is not
/// later than the waking entity's, unless it has used up its request:
/// check_preempt_wakeup_fair() first calls update_curr(), whose
/// update_deadline() reschedules a curr whose vruntime reached its
/// deadline when another entity is queued. Run-to-parity as fair.c's
/// protect_slice(), which `__pick_eevdf()` asks only after dropping an
/// ineligible curr: an eligible curr within its request keeps the CPU
/// until it has run the minimum slice of it, whichever deadline is earlier.
pub fn preempt_verdict(at: &PreemptAt) -> Verdict {
    let PreemptAt {
        curr_active,
        wake_eligible,
        curr_eligible,
        curr_done,
        wake_rel_deadline,
        curr_rel_deadline,
        curr_ran_ns,
        min_run_ns,
    } = *at;
    if !curr_active {
        Verdict::NoCurr
    } else if !wake_eligible {
        Verdict::Ineligible
    } else if !curr_eligible || curr_done {
        // Past its share or done with its slice: nothing protects it.
        Verdict::Yes
    } else if wake_rel_deadline >= curr_rel_deadline {
        Verdict::Later
    } else if curr_ran_ns < min_run_ns {
        Verdict::Parity
    } else {
        Verdict::Yes
    }
}

/// Where a task that went to sleep at @vruntime, when its queue's V was
/// @v_sleep, is placed when it wakes with V at @v_wake, by the closed forms
/// of the two kernels, with @policy_lag for their thresholds:
/// - a task that may run on several CPUs, as EEVDF's place_entity()
///   (PLACE_LAG): back at V - vlag, vlag = V - v_i noted at dequeue
///   (update_entity_lag()), here at least 0 and at most @policy_lag; a task
///   ahead of V keeps its vruntime rather than its lead;
/// - a task @pinned to one CPU, as CFS's place_entity() before EEVDF:
///   max(vruntime, min_vruntime - thresh), thresh = 2 * @policy_lag.
///
/// Vtimes wrap: the forms are computed on offsets from @v_sleep.
pub fn woken_vruntime(
    vruntime: u64,
    v_sleep: u64,
    v_wake: u64,
    policy_lag: u64,
    pinned: bool,
) -> u64 {
    let off = |x: u64| i128::from(x.wrapping_sub(v_sleep) as i64);
    let (v, wake) = (off(vruntime), off(v_wake));
    let placed = if pinned {
        wake - 2 * i128::from(policy_lag)
    } else {
        wake - (-v).clamp(0, i128::from(policy_lag))
    };
    v_sleep.wrapping_add(placed.max(v) as i64 as u64)
}

/// One stop of a task: it ran @ran_ns of the @granted_ns slice it got, and
/// was still runnable (preempted, or its slice used up) or went to sleep.
#[derive(Clone, Copy, Debug)]
pub struct Stop {
    pub ran_ns: u64,
    pub granted_ns: u64,
    pub runnable: bool,
}

/// What a task has run of its current request when it runs after @stops,
/// the count run-to-parity's minimum is measured by, as fair.c keeps
/// requests between tasks of equal slices: a request begins at a wake-up
/// (place_entity() sets a deadline a slice ahead), its runs add up across
/// preemptions (set_protect_slice() protects it up to that deadline at
/// each pick, and a preemption moves neither), and it ends once they reach
/// the slice (update_deadline(): the vruntime has reached the deadline),
/// the next request beginning then. Here the slice of a request is the
/// one its latest run got. Replayed stop by stop from the first.
pub fn run_since_request(stops: &[Stop]) -> u64 {
    let mut request_run = 0;
    for stop in stops {
        request_run = if !stop.runnable {
            // Slept: the wake-up begins a new request.
            0
        } else if request_run + stop.ran_ns >= stop.granted_ns {
            // The runs reached the slice: the deadline moves on.
            0
        } else {
            request_run + stop.ran_ns
        };
    }
    request_run
}

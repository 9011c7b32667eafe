//! The one-CPU, one-task model that bpf/pelt_test.bpf.c replays, in Rust on
//! top of the reference: same order of updates, same transitions. Each step
//! lets `delta_ns` pass in the current state, then applies its op.

use super::reference::{Avg, Clock, Pelt, util_est_update};

/// enum cadence_pelt_state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Asleep = 0,
    Waiting = 1,
    Running = 2,
}

/// enum cadence_pelt_step_op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Stay = 0,
    Sleep = 1,
    Wake = 2,
    Run = 3,
    Preempt = 4,
}

#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub delta_ns: u64,
    /// Frequency ratio over the step, 1024 = freq_max.
    pub freq_scale: u32,
    /// CPU capacity, 1024 = the biggest CPU.
    pub cpu_cap: u32,
    pub op: Op,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub clock: Clock,
    pub cpu: Avg,
    pub task: Avg,
    /// The task's util_avg after each step.
    pub task_util: Vec<u32>,
}

fn busy(state: State) -> bool {
    state != State::Asleep
}

fn next_state(state: State, op: Op) -> State {
    match op {
        Op::Stay => state,
        Op::Sleep => State::Asleep,
        Op::Wake | Op::Preempt => State::Waiting,
        Op::Run => State::Running,
    }
}

pub fn run(pelt: &Pelt, start_ns: u64, start: State, steps: &[Step]) -> Outcome {
    let mut clock = Clock {
        clock_pelt: start_ns,
        lost_idle_time: 0,
        clock_task: start_ns,
    };
    let fresh = Avg {
        last_update_time: start_ns,
        ..Avg::default()
    };
    let (mut cpu, mut task) = (fresh, fresh);
    let mut state = start;
    let mut now = start_ns;
    let mut task_util = Vec::with_capacity(steps.len());
    for s in steps {
        now = now.wrapping_add(s.delta_ns);
        if busy(state) {
            clock.busy(now, s.cpu_cap, s.freq_scale);
        } else {
            clock.idle(now);
        }
        let pelt_now = clock.now();
        pelt.update(
            pelt_now,
            &mut task,
            1024,
            state != State::Asleep,
            state == State::Running,
        );
        pelt.update(pelt_now, &mut cpu, 1, busy(state), busy(state));
        let next = next_state(state, s.op);
        if s.op == Op::Sleep {
            util_est_update(&mut task, s.cpu_cap);
        }
        if busy(state) && !busy(next) {
            clock.go_idle(now, cpu.util_sum);
        }
        state = next;
        task_util.push(task.util_avg as u32);
    }
    Outcome {
        clock,
        cpu,
        task,
        task_util,
    }
}

/// A periodic task: runs `run_ns` then sleeps `sleep_ns`, `periods` times,
/// at a fixed frequency ratio and full capacity.
pub fn periodic(run_ns: u64, sleep_ns: u64, freq_scale: u32, periods: usize) -> Vec<Step> {
    let step = |delta_ns, op| Step {
        delta_ns,
        freq_scale,
        cpu_cap: 1024,
        op,
    };
    (0..periods)
        .flat_map(|_| [step(run_ns, Op::Sleep), step(sleep_ns, Op::Run)])
        .collect()
}

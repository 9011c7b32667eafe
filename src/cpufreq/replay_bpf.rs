//! The BPF cpufreq target and deadband run outside the scheduler:
//! bpf/cpufreq_replay.bpf.c's SEC("syscall") program through
//! BPF_PROG_TEST_RUN, one CPU's steps at a time, in order. `cpufreq replay`
//! and the host tests use it.

use std::mem::MaybeUninit;

use anyhow::{Context, Result, bail};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};

use crate::bpf_intf;

mod skel {
    include!(concat!(env!("OUT_DIR"), "/cpufreq_replay_skel.rs"));
}

/// One step as the BPF code takes it: @delta_ns pass, then an evaluation
/// at @util (and maybe an iowait wake-up); with @idle, the CPU goes idle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Step {
    pub delta_ns: u64,
    pub util: u32,
    pub iowait: bool,
    pub idle: bool,
}

/// After one step: its verdict (enum cadence_cpufreq_verdict), the target
/// in force, and the target its util asks for before the deadband.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub verdict: u32,
    pub target: u32,
    pub want: u32,
}

const CHUNK: usize = bpf_intf::cadence_cpufreq_consts_CADENCE_CPUFREQ_REPLAY_STEPS as usize;

/// The loaded program.
pub struct BpfCpufreq {
    skel: skel::CpufreqReplaySkel<'static>,
}

impl BpfCpufreq {
    /// Loads the program (needs CAP_BPF and CAP_PERFMON, or root).
    pub fn load() -> Result<BpfCpufreq> {
        let object = Box::leak(Box::new(MaybeUninit::uninit()));
        let open = skel::CpufreqReplaySkelBuilder::default()
            .open(object)
            .context("opening the BPF cpufreq replay program")?;
        let skel = open.load().context(
            "loading the BPF cpufreq replay program (it needs root: CAP_BPF and CAP_PERFMON)",
        )?;
        Ok(BpfCpufreq { skel })
    }

    /// Runs @steps from @state at @start_ns under @pol, with TICK_NSEC
    /// @tick_ns; @state ends where the CPU's state ends.
    pub fn run(
        &self,
        pol: &bpf_intf::cadence_policy,
        tick_ns: u64,
        state: &mut bpf_intf::cadence_cpu_cpufreq,
        start_ns: u64,
        steps: &[Step],
    ) -> Result<Vec<Outcome>> {
        // SAFETY: a bindgen struct of integers: all zeroes is a valid value.
        let mut ctx: Box<bpf_intf::cadence_cpufreq_replay> =
            Box::new(unsafe { std::mem::zeroed() });
        ctx.policy = *pol;
        ctx.tick_ns = tick_ns;
        ctx.state = *state;
        ctx.start_ns = start_ns;
        let mut out = Vec::with_capacity(steps.len());
        for chunk in steps.chunks(CHUNK) {
            ctx.nr_steps = chunk.len() as u32;
            for (slot, s) in ctx.steps.iter_mut().zip(chunk) {
                slot.delta_ns = s.delta_ns;
                slot.util = s.util;
                slot.iowait = s.iowait as u32;
                slot.idle = s.idle as u32;
            }
            let input = bpf_intf::test_run_input(&mut *ctx);
            self.skel
                .progs
                .cpufreq_replay
                .test_run(input)
                .context("BPF_PROG_TEST_RUN of cpufreq_replay")?;
            if ctx.error != 0 {
                bail!("cpufreq_replay refused its input ({})", ctx.error);
            }
            out.extend((0..chunk.len()).map(|i| Outcome {
                verdict: ctx.verdict[i],
                target: ctx.target[i],
                want: ctx.want[i],
            }));
            // Wrapping, as the program's clock: a delta may be a step back.
            ctx.start_ns = chunk
                .iter()
                .fold(ctx.start_ns, |t, s| t.wrapping_add(s.delta_ns));
        }
        *state = ctx.state;
        Ok(out)
    }
}

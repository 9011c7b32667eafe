//! cpufreq hints outside the scheduler: the BPF target and deadband run
//! through BPF_PROG_TEST_RUN (replay_bpf.rs), `cpufreq record` of the
//! running scheduler's steps into a trace (record.rs, trace.rs), and
//! `cpufreq replay` of a trace under other policies and bands (replay.rs).
//!
//! The host tests compare the BPF code with a Rust reference written from
//! the kernel's definitions (kernel/sched/cpufreq_schedutil.c) and seed 004
//! (reference.rs, test-only): the same verdicts, targets and counters.

#[cfg(test)]
mod bpf_tests;
pub mod cli;
mod record;
#[cfg(test)]
pub mod reference;
pub mod replay;
pub mod replay_bpf;
pub mod trace;

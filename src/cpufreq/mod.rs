//! A Rust reference of bpf/cpufreq_target.bpf.h: each CPU's cpufreq target
//! from util, the deadband in front of scx_bpf_cpuperf_set(), and
//! schedutil's legacy iowait boost, written from the kernel's definitions
//! (kernel/sched/cpufreq_schedutil.c) and seed 004. The host tests run the
//! BPF code through a SEC("syscall") program (bpf/cpufreq_test.bpf.c) and
//! require the same verdicts, targets and counters (bpf_tests.rs).
//!
//! Test-only: the scheduler runs the BPF code, never this.

#[cfg(test)]
mod bpf_tests;
#[cfg(test)]
pub mod reference;

//! A Rust reference of the kernel's PELT (kernel/sched/pelt.c, pelt.h and
//! util_est in fair.c), written from the kernel's definitions and checked
//! against its published constants. The host tests run bpf/pelt.bpf.h
//! through SEC("syscall") programs and require the same numbers, bit for
//! bit (bpf_tests.rs); model_tests.rs checks the reference itself against
//! what PELT is meant to do (half-life, saturation, frequency invariance).
//!
//! Test-only: the scheduler runs the BPF code, never this.

#[cfg(test)]
mod bpf_tests;
#[cfg(test)]
mod glue_tests;
#[cfg(test)]
mod kernel_vectors;
#[cfg(test)]
mod model;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
pub mod reference;

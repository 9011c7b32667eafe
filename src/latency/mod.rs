//! Wake-up latency's math (bpf/deadline.bpf.h): EEVDF's virtual deadlines,
//! eligibility, and the wake-up preemption decision. reference.rs restates
//! kernel/sched/fair.c; bpf_tests.rs runs the BPF code through
//! BPF_PROG_TEST_RUN of bpf/deadline_test.bpf.c and requires the same
//! results, bit for bit.
//!
//! Test-only: the scheduler runs the BPF code, never this.

mod bpf_tests;
pub mod reference;

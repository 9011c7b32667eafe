//! Idle states: the learner's tables (bpf/idle_learn.bpf.h), its reference
//! model, and running it outside the scheduler.

pub mod learner_bpf;
pub mod reference;
pub mod table;

#[cfg(test)]
mod bpf_tests;

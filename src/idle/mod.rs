//! Idle states: what the machine's CPUs can sleep in, and what the BPF
//! learner (bpf/idle_learn.bpf.c) makes of their idle periods.
//!
//! - `states`: each online CPU's table of idle states (name, exit latency,
//!   target residency, disabled), read from sysfs cpuidle or from an
//!   `--idle-states FILE`, and printed by `scx_cadence idle-states`.
//! - `attach`: the learner's programs and maps in the scheduler.
//! - `table`: one CPU's learned table as Rust and JSON see it.
//! - `reference` (tests only): the learner in plain Rust.
//! - `period`: one idle period and the scores per source, as record and
//!   replay see them.
//! - `learner_bpf`: the BPF learner run outside the scheduler.
//! - `table_file`, `manage`: `ctl idle save/load/reset`.
//! - `latency_req`: the PM QoS limit the learner's teo reads, fed to BPF.
//! - `qos`: per-CPU PM QoS resume-latency limits, saved and restored;
//!   `qos_rule`: the limit a learned table asks for; `qos_live`: both in
//!   the running scheduler (`idle.qos = "learned"`).
//! - `trace`, `record`, `replay`: `idle record` and `idle replay` (`cli`);
//!   `energy`: replay's energy proxy.

pub mod attach;
pub mod cli;
mod energy;
pub mod latency_req;
pub mod learner_bpf;
pub mod manage;
pub mod period;
pub mod qos;
pub mod qos_live;
pub mod qos_rule;
mod record;
#[cfg(test)]
pub mod reference;
mod replay;
pub mod score_table;
pub mod states;
mod states_file;
mod states_sysfs;
pub mod table;
pub mod table_file;
mod trace;

#[cfg(test)]
mod bpf_tests;

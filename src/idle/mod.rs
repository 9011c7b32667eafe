//! Idle states: what the machine's CPUs can sleep in.
//!
//! `states`: each online CPU's table of idle states (name, exit latency,
//! target residency, disabled), read from sysfs cpuidle or from an
//! `--idle-states FILE`, and printed by `scx_cadence idle-states`.

pub mod states;
mod states_file;
mod states_sysfs;

//! Idle states (issue 13).

// The scheduler starts using the writer when idle.qos = "learned" is wired
// in; until then only its tests do.
#[allow(dead_code)]
pub mod qos;

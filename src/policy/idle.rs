//! The policy's `[idle]` section: the idle-state learner (bpf/idle_learn.bpf.h)
//! and how its predictions act. Ranges are in schema.rs.

use serde::{Deserialize, Serialize};

use super::choices::{IdlePick, IdlePlace, IdlePredictor, IdleQos};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Idle {
    /// Which prediction acts; off stops learning.
    pub predictor: IdlePredictor,
    /// How the weighted predictor reads its row.
    pub pick: IdlePick,
    /// Seed 003's LEARNING_RATE, percent of a weight.
    pub learning_rate: u64,
    /// Row updates between two agings of the row; 0: no aging.
    pub aging_interval: u64,
    /// Idle states break ties in placement.
    pub place: IdlePlace,
    /// Per-CPU PM QoS resume-latency limits from the table.
    pub qos: IdleQos,
}

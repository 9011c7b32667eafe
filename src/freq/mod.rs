//! CPU frequencies: what this machine's base, turbo and maximum frequencies
//! are (table.rs, from MSRs, AMD CPPC or cpufreq), which of them is
//! freq_max (choice.rs), where each CPU's current frequency ratio comes
//! from (source.rs: APERF/MPERF perf events, the kernel's cpuperf, or none),
//! and `scx_cadence freq-max --list` (list.rs).

pub mod choice;
mod governor;
mod hybrid;
mod list;
mod msr;
pub mod probe;
mod source;
mod sysfs;
mod table;

#[cfg(test)]
mod bpf_tests;

pub use choice::{FreqMax, MHZ_RANGE};
pub use governor::Governors;
pub use hybrid::probe as probe_hybrid;
pub use list::print_list;
pub use source::{FreqSource, SourceKind};
pub use table::FreqTable;

#[cfg(test)]
mod tests;

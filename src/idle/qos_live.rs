//! `idle.qos = "learned"` in the running scheduler: each tick of its loop,
//! while the policy in force asks for it, every CPU gets the limit
//! qos_rule gives for its learned table (never looser than the value it
//! had before us), through qos::QosLimits, which saves the originals and
//! rate-limits the writes. Leaving learned (a policy swap, any exit)
//! restores the originals at once.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use log::{info, warn};

use super::qos::{MIN_INTERVAL, QosLimits};
use super::qos_rule;
use crate::policy::{Idle, IdlePredictor, IdleQos};

/// Whether the limits act: idle.qos = learned, a predictor on (with
/// idle.predictor = off nothing learns and the tables are stale),
/// @learning (the learner has states to learn for), and the states are
/// this machine's: from sysfs, or from a file (@from_file) that
/// idle.file_is_this_machine vouches for.
pub fn wanted(idle: &Idle, learning: bool, from_file: bool) -> bool {
    idle.qos == IdleQos::Learned
        && idle.predictor != IdlePredictor::Off
        && learning
        && (!from_file || idle.file_is_this_machine)
}

/// Puts back what a killed run left saved in @run_dir (a no-op when
/// nothing is), whatever the policy: call it at start, holding the
/// instance lock, before anything else touches the files.
pub fn restore_leftovers(sysfs: &Path, run_dir: &Path) {
    // Opening for no CPU restores the saved originals and probes nothing;
    // what could not be restored stays saved for the next start.
    match QosLimits::open(sysfs, run_dir, &BTreeSet::new()) {
        Ok(q) => drop(q),
        Err(e) => warn!("PM QoS: not restoring what a previous run left: {e:#}"),
    }
}

pub struct QosLive {
    sysfs: PathBuf,
    run_dir: PathBuf,
    cpus: BTreeSet<u32>,
    /// Open while learned is in force.
    limits: Option<QosLimits>,
    /// open() failed under learned: warned once, not retried until the
    /// policy leaves learned and comes back.
    refused: bool,
    /// When every CPU's limit was last computed.
    last_scan: Option<Instant>,
    /// CPUs whose table could not be read: warned once each.
    unreadable: BTreeSet<u32>,
    /// Said once that a states file keeps idle.qos from writing.
    file_noted: bool,
}

impl QosLive {
    /// For the online @cpus; opens nothing yet.
    pub fn new(sysfs: &Path, run_dir: &Path, cpus: BTreeSet<u32>) -> QosLive {
        QosLive {
            sysfs: sysfs.to_path_buf(),
            run_dir: run_dir.to_path_buf(),
            cpus,
            limits: None,
            refused: false,
            last_scan: None,
            unreadable: BTreeSet::new(),
            file_noted: false,
        }
    }

    /// Says once that idle.qos = learned writes nothing because the states
    /// came from a file that idle.file_is_this_machine does not vouch for.
    pub fn note_untrusted_file(&mut self) {
        if !self.file_noted {
            self.file_noted = true;
            info!(
                "PM QoS: idle.qos = learned writes nothing: the idle states came from \
                 --idle-states, and idle.file_is_this_machine is false"
            );
        }
    }

    /// One tick of the scheduler's loop. @on: idle.qos = learned is in
    /// force and something learns. Then, at most once per MIN_INTERVAL (the
    /// writer's own per-CPU interval), @limit_of(cpu) is the rule's limit
    /// for the CPU's table (qos_rule::limit_us), and each CPU is asked for
    /// it, bounded by its original (qos_rule::effective); requests kept
    /// by the rate limit are written when due. Not @on: the originals go
    /// back now.
    pub fn tick(
        &mut self,
        on: bool,
        now: Instant,
        mut limit_of: impl FnMut(u32) -> Result<Option<u32>>,
    ) {
        if !on {
            self.refused = false;
            self.last_scan = None;
            if let Some(mut q) = self.limits.take() {
                // Drop tries again (and warns) if this fails.
                match q.restore_all() {
                    Ok(()) => info!("PM QoS: idle.qos off, the original limits restored"),
                    Err(e) => warn!("PM QoS: {e:#}"),
                }
            }
            return;
        }
        if self.refused {
            return;
        }
        if self.limits.is_none() {
            match QosLimits::open(&self.sysfs, &self.run_dir, &self.cpus) {
                Ok(q) => {
                    info!(
                        "PM QoS: idle.qos = learned on {} of {} CPUs",
                        q.originals().len(),
                        self.cpus.len()
                    );
                    self.limits = Some(q);
                }
                Err(e) => {
                    warn!("PM QoS: idle.qos = learned is not acting: {e:#}");
                    self.refused = true;
                    return;
                }
            }
        }
        let Some(q) = self.limits.as_mut() else {
            return;
        };
        if self
            .last_scan
            .is_none_or(|t| now.saturating_duration_since(t) >= MIN_INTERVAL)
        {
            self.last_scan = Some(now);
            for (cpu, original) in q.originals() {
                let limit = match limit_of(cpu) {
                    Ok(l) => l,
                    Err(e) => {
                        if self.unreadable.insert(cpu) {
                            warn!("PM QoS: cpu{cpu} keeps its original limit: {e:#}");
                        }
                        None
                    }
                };
                q.request(cpu, qos_rule::effective(limit, original), now);
            }
        }
        q.flush(now);
    }

    /// How many CPUs have a limit of ours in force.
    pub fn limited(&self) -> usize {
        self.limits.as_ref().map_or(0, QosLimits::limited)
    }
}

#[cfg(test)]
mod tests {
    use super::super::qos::SAVED_FILE;
    use super::super::qos::tests::{fake_sysfs, file};
    use super::*;
    use crate::owned::tests::Scratch;

    fn files(sysfs: &Path, cpus: &[u32]) -> Vec<String> {
        cpus.iter().map(|&c| file(sysfs, c)).collect()
    }

    /// The rule's limits: CPU 0 11 us, CPU 1 none, CPU 2 3 us.
    fn rule(cpu: u32) -> Result<Option<u32>> {
        Ok([Some(11), None, Some(3)][cpu as usize])
    }

    #[test]
    fn only_learned_with_a_predictor_and_this_machines_states_acts() {
        use IdlePredictor::*;
        let idle = |qos, predictor, file_is_this_machine| Idle {
            qos,
            predictor,
            file_is_this_machine,
            ..crate::policy::Policy::parse("").unwrap().idle
        };
        let learned = |p| idle(IdleQos::Learned, p, false);
        assert!(wanted(&learned(Teo), true, false));
        assert!(wanted(&learned(PerChoice), true, false));
        assert!(wanted(&learned(Seed), true, false));
        assert!(!wanted(&learned(Off), true, false));
        assert!(!wanted(&learned(PerChoice), false, false));
        assert!(!wanted(&idle(IdleQos::Off, Seed, true), true, false));
        // States from a file act only if the policy vouches for the file.
        assert!(!wanted(&learned(Seed), true, true));
        assert!(wanted(&idle(IdleQos::Learned, Seed, true), true, true));
    }

    #[test]
    fn learned_writes_the_rule_bounded_by_the_original_and_off_restores() {
        let s = Scratch::new("qos-live");
        let sysfs = fake_sysfs(&s, &[(0, "0"), (1, "777"), (2, "2")]);
        let run = s.0.join("run");
        let all = [0, 1, 2];
        let mut live = QosLive::new(&sysfs, &run, all.into());
        let t0 = Instant::now();

        // Off: nothing opened, nothing written.
        live.tick(false, t0, rule);
        assert_eq!(files(&sysfs, &all), ["0", "777", "2"]);
        assert!(!run.join(SAVED_FILE).exists());

        // Learned: CPU 0 gets 11; CPU 1 has no limit and keeps 777; CPU 2's
        // 2 us is tighter than the rule's 3 and stays.
        live.tick(true, t0, rule);
        assert_eq!(files(&sysfs, &all), ["11", "777", "2"]);
        assert_eq!(live.limited(), 1);
        assert_eq!(
            std::fs::read_to_string(run.join(SAVED_FILE)).unwrap(),
            "0 0 11\n"
        );

        // A new limit inside MIN_INTERVAL is not even computed; after it,
        // it is written.
        let later = |cpu: u32| Ok([Some(1), Some(10), None][cpu as usize]);
        live.tick(true, t0 + MIN_INTERVAL / 2, later);
        assert_eq!(files(&sysfs, &all), ["11", "777", "2"]);
        live.tick(true, t0 + MIN_INTERVAL, later);
        assert_eq!(files(&sysfs, &all), ["1", "10", "2"]);
        assert_eq!(live.limited(), 2);

        // Off: the originals at once, the saved file gone.
        live.tick(false, t0 + MIN_INTERVAL, later);
        assert_eq!(files(&sysfs, &all), ["0", "777", "2"]);
        assert!(!run.join(SAVED_FILE).exists());
        assert_eq!(live.limited(), 0);

        // Learned again: opened again, written at once.
        live.tick(true, t0 + MIN_INTERVAL, rule);
        assert_eq!(files(&sysfs, &all), ["11", "777", "2"]);
        // And dropping (any exit) restores.
        drop(live);
        assert_eq!(files(&sysfs, &all), ["0", "777", "2"]);
        assert!(!run.join(SAVED_FILE).exists());
    }

    #[test]
    fn an_unreadable_table_keeps_the_original_and_the_others_work() {
        let s = Scratch::new("qos-live-err");
        let sysfs = fake_sysfs(&s, &[(0, "0"), (2, "0")]);
        let run = s.0.join("run");
        // CPU 1 has no QoS file at all: warned about by QosLimits.
        let mut live = QosLive::new(&sysfs, &run, [0, 1, 2].into());
        let t0 = Instant::now();
        live.tick(true, t0, |cpu| {
            if cpu == 0 {
                anyhow::bail!("no table")
            }
            rule(cpu)
        });
        assert_eq!(files(&sysfs, &[0, 2]), ["0", "3"]);
        assert_eq!(live.unreadable, [0].into());
        assert_eq!(live.limited(), 1);
    }

    #[test]
    fn a_saved_file_it_cannot_read_stops_it_until_off_and_learned_again() {
        let s = Scratch::new("qos-live-bad");
        let sysfs = fake_sysfs(&s, &[(0, "0")]);
        let run = s.0.join("run");
        crate::owned::create_dir(&run, 0o700, "test").unwrap();
        std::fs::write(run.join(SAVED_FILE), "garbage\n").unwrap();
        let mut live = QosLive::new(&sysfs, &run, [0].into());
        let t0 = Instant::now();
        live.tick(true, t0, rule);
        assert!(live.refused);
        assert_eq!(files(&sysfs, &[0]), ["0"]);
        // Leftovers the start cannot parse are left alone too.
        restore_leftovers(&sysfs, &run);
        assert_eq!(
            std::fs::read_to_string(run.join(SAVED_FILE)).unwrap(),
            "garbage\n"
        );
        // Fixed, off, learned: it acts.
        std::fs::remove_file(run.join(SAVED_FILE)).unwrap();
        live.tick(false, t0, rule);
        live.tick(true, t0, rule);
        assert_eq!(files(&sysfs, &[0]), ["11"]);
    }

    #[test]
    fn leftovers_of_a_killed_run_are_restored_at_start() {
        let s = Scratch::new("qos-live-kill");
        let sysfs = fake_sysfs(&s, &[(0, "777"), (2, "0")]);
        let run = s.0.join("run");
        let mut live = QosLive::new(&sysfs, &run, [0, 2].into());
        live.tick(true, Instant::now(), rule);
        assert_eq!(files(&sysfs, &[0, 2]), ["11", "3"]);
        // kill -9: no Drop.
        std::mem::forget(live);
        restore_leftovers(&sysfs, &run);
        assert_eq!(files(&sysfs, &[0, 2]), ["777", "0"]);
        assert!(!run.join(SAVED_FILE).exists());
    }
}

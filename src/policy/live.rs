//! The policy in force and its generation, and how a change reaches BPF:
//! the whole `policy` slot is written under its spin lock (BPF_F_LOCK), then
//! `policy_state.generation` is bumped, which makes every CPU refresh its
//! copy (bpf/policy.bpf.c). A change that cannot be checked or written
//! leaves the previous policy in force.

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags};
use log::{info, warn};

use super::{Named, Source};
use crate::bpf_intf::{self, as_bytes};
use crate::control::{Reply, Request};
use crate::freq::FreqTable;

/// The policy the scheduler runs with.
pub struct Live {
    current: Named,
    /// What `current` became for BPF (to_bpf.rs), as written.
    built: bpf_intf::cadence_policy,
    generation: u64,
    /// This machine's frequencies, which freq.max resolves against.
    freq: FreqTable,
}

impl Live {
    /// The first policy; it reaches BPF with write() before attaching. An
    /// error if its freq.max is not available on this machine.
    pub fn new(first: Named, freq: FreqTable) -> Result<Self> {
        let built = first.policy.to_bpf(&freq).context("the starting policy")?;
        Ok(Self {
            current: first,
            built,
            generation: 1,
            freq,
        })
    }

    pub fn freq(&self) -> &FreqTable {
        &self.freq
    }

    pub fn current(&self) -> &Named {
        &self.current
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The policy in force as BPF reads it.
    pub fn built(&self) -> &bpf_intf::cadence_policy {
        &self.built
    }

    /// Writes the policy in force into the BPF maps (at load, and again after
    /// a hotplug re-attach, which starts with fresh maps).
    pub fn write(&self, slot_map: &impl MapCore, state_map: &impl MapCore) -> Result<()> {
        write_maps(slot_map, state_map, self.built, self.generation)
    }

    /// Puts @next in force as the next generation; on error nothing changes.
    pub fn apply(
        &mut self,
        next: Named,
        slot_map: &impl MapCore,
        state_map: &impl MapCore,
    ) -> Result<u64> {
        let generation = self.generation + 1;
        // A freq.max this machine lacks is refused before anything is written.
        let policy = next.policy.to_bpf(&self.freq)?;
        if let Err(e) = write_maps(slot_map, state_map, policy, generation) {
            // Put the old slot back; its generation is still the one in force.
            let _ = self.write(slot_map, state_map);
            return Err(e);
        }
        if let Some(note) = next.policy.note(&self.freq) {
            warn!("{note}");
        }
        self.current = next;
        self.built = policy;
        self.generation = generation;
        info!(
            "policy {} in force (generation {generation})",
            self.current.name
        );
        Ok(generation)
    }

    /// Carries out a control request and says what is in force afterwards.
    pub fn handle(
        &mut self,
        request: Request,
        slot_map: &impl MapCore,
        state_map: &impl MapCore,
    ) -> Reply {
        let next = match request {
            Request::Get {} => Ok(None),
            Request::Switch { policy, text: None } => Named::load(&policy).map(Some),
            Request::Switch {
                policy,
                text: Some(text),
            } => Named::from_text(std::path::Path::new(&policy), &text).map(Some),
            Request::Set { assignments } => self.current.edited(&assignments).map(Some),
            // The scheduler answers these (idle::manage).
            Request::IdleSave {} | Request::IdleLoad { .. } | Request::IdleReset {} => {
                Err(anyhow::anyhow!("not a policy request"))
            }
        };
        let result = next.and_then(|n| match n {
            Some(n) => self.apply(n, slot_map, state_map).map(|_| ()),
            None => Ok(()),
        });
        Reply {
            error: result.err().map(|e| format!("{e:#}")),
            ..self.reply()
        }
    }

    /// Reloads the policy from its file or preset (SIGHUP).
    pub fn reload(&mut self, slot_map: &impl MapCore, state_map: &impl MapCore) -> Result<u64> {
        let what = match &self.current.source {
            Source::File(p) => p.display().to_string(),
            Source::Preset(n) => format!("preset {n}"),
        };
        let next = self
            .current
            .reload()
            .with_context(|| format!("reloading {what}"))?;
        self.apply(next, slot_map, state_map)
    }

    /// A reply describing the policy in force.
    pub fn reply(&self) -> Reply {
        Reply {
            error: None,
            generation: self.generation,
            name: self.current.name.clone(),
            policy: self.current.policy.to_toml(),
            bpf: super::bpf_fields(&self.built),
            idle: None,
        }
    }
}

fn write_maps(
    slot_map: &impl MapCore,
    state_map: &impl MapCore,
    policy: bpf_intf::cadence_policy,
    generation: u64,
) -> Result<()> {
    let key = 0u32.to_ne_bytes();
    let slot = bpf_intf::cadence_policy_slot {
        lock: bpf_intf::bpf_spin_lock { val: 0 },
        __pad: 0,
        generation,
        policy,
    };
    slot_map
        .update(&key, as_bytes(&slot), MapFlags::LOCK)
        .context("writing the policy map")?;
    let state = bpf_intf::cadence_policy_state { generation };
    state_map
        .update(&key, as_bytes(&state), MapFlags::ANY)
        .context("writing the policy_state map")?;
    Ok(())
}

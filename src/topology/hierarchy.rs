//! The machine as scx_cadence sees it: CPU → small core → big core → LLC →
//! NUMA node.
//!
//! A small core is the threads that share an L1 cache: POWER9's SMT4 halves
//! of an SMT8 big core (interleaved ids {0,2,4,6} and {1,3,5,7}), an x86
//! SMT2 core, a single-threaded hybrid E-core. A big core is what such small
//! cores are fused into or share an L2 with: POWER9's SMT8 core, a cluster
//! of four E-cores, a module of two SMT2 cores; on plain SMT2 and on
//! machines without SMT a big core is one small core.
//!
//! Each level must partition the online CPUs and nest in the next. Input
//! that does not (inconsistent sysfs) is not an error: the offending level
//! falls back to the one below it for the CPUs concerned, and a note says
//! so, so the result is always a valid, maybe flatter, hierarchy.

use std::collections::{BTreeMap, BTreeSet};

use super::cpulist;

/// What one CPU's files (or a topology file) say about it: the CPUs it
/// shares each level with, itself included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuGroups {
    pub small: BTreeSet<u32>,
    pub big: BTreeSet<u32>,
    pub llc: BTreeSet<u32>,
    pub node: u32,
}

/// Where one CPU sits: an index into each level's list of groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub small: usize,
    pub big: usize,
    pub llc: usize,
    pub node: u32,
}

/// The hierarchy of the online CPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hierarchy {
    /// Every online CPU's place.
    pub cpus: BTreeMap<u32, Place>,
    /// The groups of each level, ordered by their lowest CPU.
    pub small: Vec<BTreeSet<u32>>,
    pub big: Vec<BTreeSet<u32>>,
    pub llc: Vec<BTreeSet<u32>>,
    /// What was missing or inconsistent, and what was done about it.
    pub notes: Vec<String>,
}

/// The level names, for notes.
#[derive(Clone, Copy)]
enum Level {
    Small,
    Big,
    Llc,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Small => "small core",
            Level::Big => "big core",
            Level::Llc => "LLC",
        }
    }

    fn get(self, g: &CpuGroups) -> &BTreeSet<u32> {
        match self {
            Level::Small => &g.small,
            Level::Big => &g.big,
            Level::Llc => &g.llc,
        }
    }

    fn get_mut(self, g: &mut CpuGroups) -> &mut BTreeSet<u32> {
        match self {
            Level::Small => &mut g.small,
            Level::Big => &mut g.big,
            Level::Llc => &mut g.llc,
        }
    }
}

/// CPUs of @level whose group is not what its members say theirs is.
fn not_a_partition(cpus: &BTreeMap<u32, CpuGroups>, level: Level) -> BTreeSet<u32> {
    let mut bad = BTreeSet::new();
    for (cpu, g) in cpus {
        let mine = level.get(g);
        let agreed = mine.contains(cpu)
            && mine
                .iter()
                .all(|m| cpus.get(m).is_some_and(|o| level.get(o) == mine));
        if !agreed {
            bad.insert(*cpu);
            bad.extend(mine.iter().filter(|m| cpus.contains_key(m)));
        }
    }
    bad
}

impl Hierarchy {
    /// Builds the hierarchy from each online CPU's groups (members that are
    /// not online are dropped first), flattening what is inconsistent.
    pub fn from_groups(groups: BTreeMap<u32, CpuGroups>, mut notes: Vec<String>) -> Hierarchy {
        let online: BTreeSet<u32> = groups.keys().copied().collect();
        let mut cpus = groups;
        for (cpu, g) in cpus.iter_mut() {
            for level in [Level::Small, Level::Big, Level::Llc] {
                let set = level.get_mut(g);
                set.retain(|c| online.contains(c));
                set.insert(*cpu);
            }
        }
        // Partitions, from the bottom: a level that is not one falls back
        // to the level below for the CPUs concerned.
        for level in [Level::Small, Level::Big, Level::Llc] {
            let bad = not_a_partition(&cpus, level);
            if bad.is_empty() {
                continue;
            }
            notes.push(format!(
                "CPUs {}: their {} groups overlap or disagree; each {} taken as {}",
                cpulist::format(&bad),
                level.name(),
                level.name(),
                match level {
                    Level::Small => "its own CPU",
                    Level::Big => "its small core",
                    Level::Llc => "its big core",
                }
            ));
            for cpu in &bad {
                let g = cpus.get_mut(cpu).unwrap();
                *level.get_mut(g) = match level {
                    Level::Small => BTreeSet::from([*cpu]),
                    Level::Big => g.small.clone(),
                    Level::Llc => g.big.clone(),
                };
            }
        }
        // Nesting: a small core spanning big cores, or a big core spanning
        // LLCs, makes the upper group its lower one.
        for (lower, upper) in [(Level::Small, Level::Big), (Level::Big, Level::Llc)] {
            let bad: BTreeSet<u32> = cpus
                .iter()
                .filter(|(_, g)| !lower.get(g).is_subset(upper.get(g)))
                .map(|(c, _)| *c)
                .collect();
            if bad.is_empty() {
                continue;
            }
            notes.push(format!(
                "CPUs {}: a {} spans more than one {}; each {} taken as its {}",
                cpulist::format(&bad),
                lower.name(),
                upper.name(),
                upper.name(),
                lower.name()
            ));
            // Everyone sharing an upper group with a bad CPU takes its
            // lower group, so the level stays a partition.
            let touched: BTreeSet<u32> = bad
                .iter()
                .flat_map(|c| upper.get(&cpus[c]).clone())
                .collect();
            for cpu in touched {
                let g = cpus.get_mut(&cpu).unwrap();
                *upper.get_mut(g) = lower.get(g).clone();
            }
        }
        Self::index(cpus, notes)
    }

    /// Numbers the groups of each level by their lowest CPU.
    fn index(cpus: BTreeMap<u32, CpuGroups>, notes: Vec<String>) -> Hierarchy {
        let groups = |level: Level| -> Vec<BTreeSet<u32>> {
            let set: BTreeSet<Vec<u32>> = cpus
                .values()
                .map(|g| level.get(g).iter().copied().collect())
                .collect();
            let mut v: Vec<BTreeSet<u32>> =
                set.into_iter().map(|g| g.into_iter().collect()).collect();
            v.sort_by_key(|g| g.first().copied());
            v
        };
        let (small, big, llc) = (groups(Level::Small), groups(Level::Big), groups(Level::Llc));
        let find = |list: &[BTreeSet<u32>], cpu: &u32| list.iter().position(|g| g.contains(cpu));
        let places = cpus
            .iter()
            .map(|(cpu, g)| {
                let place = Place {
                    small: find(&small, cpu).expect("every CPU is in its small core"),
                    big: find(&big, cpu).expect("every CPU is in its big core"),
                    llc: find(&llc, cpu).expect("every CPU is in its LLC"),
                    node: g.node,
                };
                (*cpu, place)
            })
            .collect();
        Hierarchy {
            cpus: places,
            small,
            big,
            llc,
            notes,
        }
    }

    /// The big cores of LLC @llc, in the hierarchy's order (lowest CPU
    /// first).
    pub fn big_cores_of(&self, llc: usize) -> BTreeSet<usize> {
        self.cpus
            .values()
            .filter(|p| p.llc == llc)
            .map(|p| p.big)
            .collect()
    }

    /// The small cores inside big core @big.
    pub fn small_cores_of(&self, big: usize) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .cpus
            .values()
            .filter(|p| p.big == big)
            .map(|p| p.small)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        v.sort_by_key(|&s| self.small[s].first().copied());
        v
    }
}

//! The energy proxy of `idle replay`, idlestat-like: a CPU in idle state i
//! draws the state's power P_i (`power=N` in a states file), and entering
//! and leaving it costs a fixed energy E_i. (idlestat takes a wake-up
//! energy given per cluster; the tables here give none.) So the E_i are
//! derived from the target residencies: the target
//! residency T_i is the shortest stay for which state i saves energy over
//! the next shallower one (Documentation/admin-guide/pm/cpuidle.rst), so
//! the two break even at T_i:
//!
//!   E_i + P_i T_i = E_(i-1) + P_(i-1) T_i,
//!   E_i = E_(i-1) + (P_(i-1) - P_i) T_i,  with E_0 = 0.
//!
//! A period of d ns in state i then costs E_i + P_i d. E_0 = 0 leaves out
//! what even the shallowest state costs to enter and leave: the same for
//! every choice of a period, so it changes no difference between sources
//! (the extra energy per period, `EnergyUse::extra_per_period`), but a
//! ratio over the least is the largest the model allows: a real E_0 adds
//! to both sides. Every figure is an integer (power unit x ns), exact.
//!
//! Each source is compared with the least energy any enabled state could
//! have spent on the same periods. With every state enabled and the powers
//! strictly falling, that is the residency ideal's state (the deepest whose
//! target residency the period lasted): E_i + P_i d - (E_(i-1) + P_(i-1) d)
//! = (P_(i-1) - P_i) (T_i - d), negative exactly when d > T_i.

use super::states::IdleState;

/// One CPU's states as the proxy sees them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnergyModel {
    /// P_i, in the states file's unit.
    pub power: Vec<u64>,
    /// E_i, in that unit times ns (u128: a u32 power times a u32 number
    /// of microseconds in ns overflows u64).
    pub transition: Vec<u128>,
    pub disabled: Vec<bool>,
}

impl EnergyModel {
    /// The model of @states, or None when they carry no power (a table
    /// from sysfs, or a file without `power=`). The file's parser has
    /// checked that every state has one, none above the previous state's.
    pub fn new(states: &[IdleState]) -> Option<EnergyModel> {
        let power: Vec<u64> = states
            .iter()
            .map(|s| s.power.map(u64::from))
            .collect::<Option<_>>()?;
        let mut transition = Vec::with_capacity(power.len());
        for (i, s) in states.iter().enumerate() {
            // The file's parser refuses a deeper state with more power.
            debug_assert!(i == 0 || power[i] <= power[i - 1]);
            let e = match i {
                0 => 0,
                _ => {
                    let t_ns = u128::from(s.target_residency_us) * 1000;
                    transition[i - 1] + u128::from(power[i - 1].saturating_sub(power[i])) * t_ns
                }
            };
            transition.push(e);
        }
        Some(EnergyModel {
            power,
            transition,
            disabled: states.iter().map(|s| s.disabled).collect(),
        })
    }

    /// E_i + P_i d: a period of @duration_ns in @state.
    pub fn period(&self, state: usize, duration_ns: u64) -> u128 {
        self.transition[state] + u128::from(self.power[state]) * u128::from(duration_ns)
    }

    /// The least any enabled state would have spent on @duration_ns (state
    /// 0 if every state is disabled, as no source can then choose).
    pub fn least(&self, duration_ns: u64) -> u128 {
        (0..self.power.len())
            .filter(|&i| !self.disabled[i])
            .map(|i| self.period(i, duration_ns))
            .min()
            .unwrap_or_else(|| self.period(0, duration_ns))
    }
}

/// What a source's choices spent, beside the least on the same periods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnergyUse {
    pub periods: u64,
    pub spent: u128,
    pub least: u128,
}

impl EnergyUse {
    /// Counts a period of @duration_ns in the chosen @state, @least being
    /// `m.least(duration_ns)` (the same for every source of the period).
    pub fn count(&mut self, m: &EnergyModel, state: usize, duration_ns: u64, least: u128) {
        self.periods += 1;
        self.spent += m.period(state, duration_ns);
        self.least += least;
    }

    /// spent / least (1.0 is the best possible); None without periods.
    pub fn ratio(&self) -> Option<f64> {
        (self.least > 0).then(|| self.spent as f64 / self.least as f64)
    }

    /// (spent - least) per period, in the power unit x us: what E_0 does
    /// not change. None without periods. In floats: with every state
    /// disabled the least is state 0's, which a choice may undercut.
    pub fn extra_per_period(&self) -> Option<f64> {
        (self.periods > 0)
            .then(|| (self.spent as f64 - self.least as f64) / 1000.0 / self.periods as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1000;

    /// docs/idle-states/juno-r0-a57.txt, worked by hand.
    fn juno() -> Vec<IdleState> {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("docs/idle-states/juno-r0-a57.txt");
        super::super::states::read_file(&file).unwrap()
    }

    #[test]
    fn transitions_break_even_at_each_target_residency() {
        let m = EnergyModel::new(&juno()).unwrap();
        assert_eq!(m.power, vec![80, 65, 24]);
        // E_1 = (80 - 65) x 2000 us; E_2 = E_1 + (65 - 24) x 2500 us.
        let us = u128::from(US);
        assert_eq!(
            m.transition,
            vec![0, 15 * 2000 * us, 30_000 * us + 41 * 2500 * us]
        );
        // At T_1 = 2000 us WFI and cpu-sleep-0 cost the same; at T_2 =
        // 2500 us cpu-sleep-0 and cluster-sleep-0 do.
        assert_eq!(m.period(0, 2000 * US), m.period(1, 2000 * US));
        assert_eq!(m.period(1, 2500 * US), m.period(2, 2500 * US));
        // 160000 (80 x 2000) at 2000 us in WFI: by hand.
        assert_eq!(m.period(0, 2000 * US), 160_000 * u128::from(US));
    }

    #[test]
    fn the_least_is_the_residency_ideal_when_all_are_enabled() {
        let m = EnergyModel::new(&juno()).unwrap();
        // 1 ms: WFI, 80 x 1000 us; cpu-sleep-0 would cost 30000 + 65000.
        assert_eq!(m.least(1000 * US), 80_000 * u128::from(US));
        // 2200 us: cpu-sleep-0, 30000 + 65 x 2200 = 173000 (WFI 176000,
        // cluster-sleep-0 132500 + 52800 = 185300).
        assert_eq!(m.least(2200 * US), 173_000 * u128::from(US));
        // 10 ms: cluster-sleep-0, 132500 + 240000.
        assert_eq!(m.least(10_000 * US), 372_500 * u128::from(US));
    }

    #[test]
    fn a_disabled_state_is_never_the_least() {
        let mut states = juno();
        states[1].disabled = true;
        let m = EnergyModel::new(&states).unwrap();
        // 2200 us without cpu-sleep-0: WFI's 176000 beats cluster-sleep-0's
        // 185300.
        assert_eq!(m.least(2200 * US), 176_000 * u128::from(US));
    }

    #[test]
    fn the_largest_legal_numbers_do_not_overflow() {
        let states = vec![
            IdleState {
                power: Some(u32::MAX),
                ..IdleState::new("a", 0, 0, false)
            },
            IdleState {
                power: Some(0),
                ..IdleState::new("b", u32::MAX, u32::MAX, false)
            },
        ];
        let m = EnergyModel::new(&states).unwrap();
        let t_ns = u128::from(u32::MAX) * 1000;
        assert_eq!(m.transition[1], u128::from(u32::MAX) * t_ns);
        assert_eq!(
            m.period(0, u64::MAX),
            u128::from(u32::MAX) * u128::from(u64::MAX)
        );
    }

    #[test]
    fn no_power_no_model() {
        let states = vec![IdleState::new("C1", 2, 2, false)];
        assert_eq!(EnergyModel::new(&states), None);
    }

    #[test]
    fn use_counts_spent_and_least() {
        let m = EnergyModel::new(&juno()).unwrap();
        let mut u = EnergyUse::default();
        assert_eq!(u.ratio(), None);
        assert_eq!(u.extra_per_period(), None);
        // A 1 ms period in cluster-sleep-0: 132500 + 24000 = 156500 spent,
        // 80000 the least.
        u.count(&m, 2, 1000 * US, m.least(1000 * US));
        assert_eq!(u.spent, 156_500 * u128::from(US));
        assert_eq!(u.least, 80_000 * u128::from(US));
        assert_eq!(u.ratio(), Some(156_500.0 / 80_000.0));
        assert_eq!(u.extra_per_period(), Some(76_500.0));
    }
}

//! `scx_cadence freq-max --list`: the frequencies found, drawn like the
//! seed's EFFIC/BASE/NC bars, and the choice in force.

use super::choice::FreqMax;
use super::table::FreqTable;

/// MHz per `*` in the bars, as in the seed (one per 100 MHz).
const MHZ_PER_STAR: u32 = 100;

fn bar(label: &str, mhz: u32, mark: bool) -> String {
    let stars = "*".repeat((mhz / MHZ_PER_STAR) as usize);
    let arrow = if mark { "  <- freq_max" } else { "" };
    format!("{label:<6} {mhz:>5} |{stars}{arrow}")
}

/// The text `freq-max --list` prints for @table with @choice in force.
pub fn render(table: &FreqTable, choice: FreqMax) -> String {
    let chosen = table.resolve(choice).ok().and_then(|r| r.mhz);
    let mut marked = false;
    let mut mark = |mhz: u32| {
        let hit = !marked && Some(mhz) == chosen;
        marked |= hit;
        hit
    };
    let mut lines = vec!["Frequencies found (MHz):".to_string()];
    if let Some(e) = table.efficiency_mhz {
        lines.push(bar("EFFIC", e, false));
    }
    if let Some(b) = table.base_mhz {
        let hit = matches!(choice, FreqMax::Base) && mark(b);
        lines.push(bar("BASE", b, hit));
    }
    for (i, &t) in table.turbo_mhz.iter().enumerate().rev() {
        let hit = match choice {
            FreqMax::Turbo(n) => n as usize == i + 1 && mark(t),
            FreqMax::Auto => mark(t),
            _ => false,
        };
        lines.push(bar(&format!("{}C", i + 1), t, hit));
    }
    if let (true, Some(m)) = (table.turbo_mhz.is_empty(), table.max_mhz) {
        let hit = mark(m);
        lines.push(bar("MAX", m, hit));
    }
    if lines.len() == 1 {
        lines.push("  (none)".to_string());
    }
    lines.push(String::new());
    lines.push("Sources:".to_string());
    lines.extend(table.notes.iter().map(|n| format!("  {n}")));
    lines.push(String::new());
    lines.push(format!("Choices: {}", table.choices().join(", ")));
    lines.push(match chosen {
        Some(m) => format!("In force: freq_max = {choice} ({m} MHz)"),
        None => format!("In force: freq_max = {choice} (no frequency known: ratios stay 1024)"),
    });
    lines.join("\n")
}

pub fn print_list(table: &FreqTable, choice: FreqMax) {
    println!("{}", render(table, choice));
}

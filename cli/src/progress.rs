//! Progress bars: the one place their looks are decided. Bars are drawn on stderr only when it
//! is a terminal and --quiet was not given ([`show`]); otherwise they are hidden and cost
//! nothing.

use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// Whether to draw progress bars: only on a terminal, and never with --quiet.
pub(crate) fn show(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// Where bars go: stderr when `draw`, nowhere otherwise.
fn target(draw: bool) -> ProgressDrawTarget {
    if draw {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}

/// A bar of `total` bytes (`oware export`): sizes in binary units.
pub(crate) fn bytes(draw: bool, total: u64) -> ProgressBar {
    styled(
        ProgressBar::with_draw_target(Some(total), target(draw)),
        "{prefix:>9} [{bar:30.cyan/blue}] {percent:>3}%  {binary_bytes}/{binary_total_bytes}  ETA {eta}",
    )
}

/// A bar of `total` items (positions, values), in `colour` (an indicatif `fg/bg` pair such as
/// `cyan/blue` or `green/white`).
pub(crate) fn count(draw: bool, total: u64, colour: &str) -> ProgressBar {
    let template = format!("{{prefix:>9}} [{{bar:30.{colour}}}] {{percent:>3}}%  {{human_pos}}/{{human_len}}  ETA {{eta}}");
    styled(ProgressBar::with_draw_target(Some(total), target(draw)), &template)
}

/// The bars of a build: drawn together (one per layer in progress above the total).
pub(crate) fn multi(draw: bool) -> MultiProgress {
    MultiProgress::with_draw_target(target(draw))
}

/// The style of a build's total bar (estimated milliseconds of the whole build).
pub(crate) fn build_total(bar: ProgressBar) -> ProgressBar {
    if let Ok(style) = ProgressStyle::with_template("{prefix:>8} [{bar:30.cyan/blue}] {percent:>3}% {elapsed_precise} ETA {average_eta}") {
        bar.set_style(style.progress_chars("=> ").with_key("average_eta", average_eta));
    }
    bar
}

/// The style of the bar of the layer (or bounds) a build is working on, in `colour` on white.
pub(crate) fn build_layer(bar: ProgressBar, colour: &str) -> ProgressBar {
    let template = format!("{{prefix}} [{{bar:30.{colour}/white}}] {{percent:>3}}% {{msg:<18}} ETA {{average_eta}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> ").with_key("average_eta", average_eta));
    }
    bar
}

fn styled(bar: ProgressBar, template: &str) -> ProgressBar {
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// The `{average_eta}` of the build's bars: the time left at the average speed since the bar
/// started (`elapsed × left / done`), as `H:MM:SS`, or `-:--:--` before a second has passed.
/// indicatif's own ETA follows the speed of the last seconds, which jumps between the phases of
/// a layer (a threshold that resolves little runs many times faster than one that resolves much);
/// the solver's work units are weighted so that the average speed holds across phases.
fn average_eta(state: &ProgressState, w: &mut dyn std::fmt::Write) {
    let elapsed = state.elapsed().as_secs_f64();
    let (done, total) = (state.pos(), state.len().unwrap_or(0));
    let text = match eta_seconds(elapsed, done, total) {
        Some(s) => format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60),
        None => "-:--:--".into(),
    };
    let _ = w.write_str(&text);
}

/// Seconds left at the average speed so far, `None` when too little is known.
fn eta_seconds(elapsed: f64, done: u64, total: u64) -> Option<u64> {
    if elapsed < 1.0 || done == 0 || total == 0 {
        return None;
    }
    let left = total.saturating_sub(done) as f64;
    Some((elapsed * left / done as f64).round().min(1e9) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_is_the_average_speed_so_far() {
        assert_eq!(eta_seconds(0.5, 10, 100), None);
        assert_eq!(eta_seconds(10.0, 0, 100), None);
        assert_eq!(eta_seconds(10.0, 5, 0), None);
        assert_eq!(eta_seconds(10.0, 25, 100), Some(30));
        assert_eq!(eta_seconds(60.0, 100, 100), Some(0));
        assert_eq!(eta_seconds(60.0, 150, 100), Some(0));
    }
}

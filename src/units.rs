//! Formatting of counts and sizes for people.

/// `1234567` -> `1,234,567`.
pub fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte count in binary units, as `--max-memory` reads them: `1.50 GiB`, `365.3 MiB`, `12 KiB`.
pub fn human_bytes(b: u64) -> String {
    let b = b as f64;
    const K: f64 = 1024.0;
    if b >= K * K * K {
        format!("{:.2} GiB", b / (K * K * K))
    } else if b >= K * K {
        format!("{:.1} MiB", b / (K * K))
    } else {
        format!("{:.0} KiB", b / K)
    }
}

/// `0..20`, `0..10, 12, 14..16`: a compact list of layer numbers.
pub fn describe_layers(ns: impl IntoIterator<Item = u32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(u32, u32)> = None;
    let flush = |run: Option<(u32, u32)>, parts: &mut Vec<String>| match run {
        Some((a, b)) if a == b => parts.push(a.to_string()),
        Some((a, b)) => parts.push(format!("{a}..{b}")),
        None => {}
    };
    for n in ns {
        run = match run {
            Some((a, b)) if n == b + 1 => Some((a, n)),
            other => {
                flush(other, &mut parts);
                Some((n, n))
            }
        };
    }
    flush(run, &mut parts);
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// `layer 5`, `layers 5, 7`, `layers 7..9`: [`describe_layers`] with the right noun.
pub fn layers_phrase(ns: impl IntoIterator<Item = u32>) -> String {
    let ns: Vec<u32> = ns.into_iter().collect();
    let word = if ns.len() == 1 { "layer" } else { "layers" };
    format!("{word} {}", describe_layers(ns))
}

/// A duration for people: `12 s`, `4.5 min`, `3.2 h`, `2.1 days`, `3.4 years`.
pub fn human_duration(seconds: f64) -> String {
    let s = seconds.max(0.0);
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.1} min", s / 60.0)
    } else if s < 172_800.0 {
        format!("{:.1} h", s / 3600.0)
    } else if s < 3.15e7 {
        format!("{:.1} days", s / 86_400.0)
    } else {
        format!("{:.1} years", s / 3.15e7)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouping_and_sizes() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(100), "100");
        assert_eq!(group_digits(1234567), "1,234,567");
        assert_eq!(human_bytes(3 << 30), "3.00 GiB");
        assert_eq!(human_bytes(383 << 20), "383.0 MiB");
        assert_eq!(human_bytes(12 << 10), "12 KiB");
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human_duration(12.0), "12 s");
        assert_eq!(human_duration(270.0), "4.5 min");
        assert_eq!(human_duration(3.0 * 86_400.0), "3.0 days");
        assert_eq!(human_duration(6.3e7), "2.0 years");
    }

    #[test]
    fn layer_lists_are_compact() {
        assert_eq!(describe_layers([0, 1, 2, 3]), "0..3");
        assert_eq!(describe_layers([0, 1, 2, 5, 7, 8]), "0..2, 5, 7..8");
        assert_eq!(describe_layers([]), "none");
        assert_eq!(layers_phrase([4]), "layer 4");
    }
}

//! Formatting of counts, sizes and layer lists for people: `1,234,567`, `1.50 GiB`, `layers 0..20`.
//!
//! Public because the library's own text and the program's must agree: the library writes these
//! forms into its error messages ([`Error::OutOfMemory`](crate::Error::OutOfMemory),
//! [`Error::DiskSpace`](crate::Error::DiskSpace)), into the summary of a directory's verification
//! ([`DirectoryReport`](crate::verify::DirectoryReport), also the `summary` of the JSON document
//! that Python and C return) and into the published facts' details; the program (`cli/`), a crate
//! over this one, writes the same counts, sizes and layer lists in its own lines around them. One
//! implementation serves both, so it lives in the lower crate.

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

/// A byte count in binary units, as `--max-memory` reads them: `1.50 GiB`, `365.3 MiB`, `12 KiB`,
/// `100 bytes` (below 1 KiB).
pub fn human_bytes(b: u64) -> String {
    if b < 1024 {
        return format!("{b} byte{}", if b == 1 { "" } else { "s" });
    }
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
        // Below 1 KiB in bytes (`--max-memory 1` said "0 KiB").
        assert_eq!(human_bytes(1), "1 byte");
        assert_eq!(human_bytes(0), "0 bytes");
        assert_eq!(human_bytes(1023), "1023 bytes");
        assert_eq!(human_bytes(1024), "1 KiB");
    }

    #[test]
    fn layer_lists_are_compact() {
        assert_eq!(describe_layers([0, 1, 2, 3]), "0..3");
        assert_eq!(describe_layers([0, 1, 2, 5, 7, 8]), "0..2, 5, 7..8");
        assert_eq!(describe_layers([]), "none");
        assert_eq!(layers_phrase([4]), "layer 4");
    }
}

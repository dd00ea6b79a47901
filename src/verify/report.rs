//! The report of a directory's verification ([`super::directory::verify_directory`]): what
//! became of each layer, its bounds, its depths to capture, the published facts and the pack manifest, the totals, a
//! one-line summary and the [`Finding`], the class of problem that dominates (the exit status of
//! `oware verify`). Plain data; it serialises as the document of `oware verify --json`.

use std::path::PathBuf;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::error::{Error, ErrorDoc, ErrorKind, Result};
use crate::facts::{FactReport, FactStatus};
use crate::manifest;
use crate::storage::DatabaseDir;
use crate::units::{group_digits, layers_phrase};
use crate::verify::companion::{layers_in, CompanionEntry, CompanionStatus};
use crate::verify::{BoundsReport, DtcReport, LayerReport, Mismatch};

/// What became of one layer's values.
#[derive(Debug)]
pub enum LayerStatus {
    /// Intact (header and checksum), read by the layers asked for, but below the range: not
    /// re-derived.
    Dependency,
    /// Intact and re-derived: the report (mismatches included).
    Checked(LayerReport),
    /// Intact, but not re-derived: the layers it reads (listed) are damaged or missing.
    Blocked {
        /// The layers it reads that are damaged or missing.
        needs: Vec<u32>,
    },
    /// The file is damaged, of another ruleset or layer, or unreadable: the error.
    Damaged(Error),
    /// The file is absent: the error.
    Missing(Error),
    /// The file is absent and no layer present needs it: the directory's gap
    /// ([`DatabaseDir::gap`]), right below the highest layer, which never reaches it (a capture
    /// takes at least 2 stones), as `oware build --for` leaves it. Not a problem.
    NotNeeded,
}

/// One layer's values in a [`DirectoryReport`].
#[derive(Debug)]
pub struct LayerEntry {
    /// The layer (stones on the board).
    pub layer: u32,
    /// What was found.
    pub status: LayerStatus,
}

impl LayerEntry {
    /// `ok`, `mismatch`, `dependency`, `not-verified` (blocked), `damaged`, `missing` or
    /// `not-needed` (a gap no layer present needs): the `status` of the JSON document.
    pub fn status_name(&self) -> &'static str {
        match &self.status {
            LayerStatus::Dependency => "dependency",
            LayerStatus::Checked(r) if r.is_ok() => "ok",
            LayerStatus::Checked(_) => "mismatch",
            LayerStatus::Blocked { .. } => "not-verified",
            LayerStatus::Damaged(_) => "damaged",
            LayerStatus::Missing(_) => "missing",
            LayerStatus::NotNeeded => "not-needed",
        }
    }
}

/// What became of one layer's forced-capture bounds.
pub type BoundsStatus = CompanionStatus<BoundsReport>;

/// One layer's bounds in a [`DirectoryReport`].
pub type BoundsEntry = CompanionEntry<BoundsReport>;

/// What became of one layer's depths to capture (dtc).
pub type DtcStatus = CompanionStatus<DtcReport>;

/// One layer's depths to capture in a [`DirectoryReport`].
pub type DtcEntry = CompanionEntry<DtcReport>;

/// The check of a pack directory's `SHA256SUMS`.
#[derive(Debug)]
pub struct ManifestCheck {
    /// The manifest's path.
    pub path: PathBuf,
    /// Whether the manifest is there: `false` for a directory holding packs of the ruleset but no
    /// `SHA256SUMS` (the packs' digests are then not checked; not a failure).
    pub present: bool,
    /// Pack files whose SHA-256 matched (0 when the check failed).
    pub files_matched: usize,
    /// Why the manifest does not match the files, or cannot be read.
    pub error: Option<Error>,
}

/// Which class of problem dominates a verification (see `super::directory` for the
/// precedence).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// Every file intact, every value, bounds entry and depth to capture follows from its
    /// children, no fact contradicted, the manifest (if any) matches.
    Ok,
    /// Some value, bounds entry or depth to capture is wrong, or a published fact is
    /// contradicted.
    WrongValues,
    /// A layer file is damaged, foreign or unreadable.
    DamagedLayer,
    /// A bounds file is damaged, foreign or unreadable.
    DamagedBounds,
    /// A dtc file is damaged, foreign or unreadable.
    DamagedDtc,
    /// The pack manifest does not match the files.
    ManifestMismatch,
    /// A layer asked for is absent.
    MissingLayer,
    /// Bounds required by [`VerifyOptions::require_bounds`](super::directory::VerifyOptions::require_bounds) are absent.
    MissingBounds,
    /// Depths to capture required by [`VerifyOptions::require_dtc`](super::directory::VerifyOptions::require_dtc) are absent.
    MissingDtc,
}

impl Finding {
    /// `ok`, `wrong_values`, `damaged_layer`, `damaged_bounds`, `damaged_dtc`,
    /// `manifest_mismatch`, `missing_layer`, `missing_bounds` or `missing_dtc`.
    pub fn name(self) -> &'static str {
        match self {
            Finding::Ok => "ok",
            Finding::WrongValues => "wrong_values",
            Finding::DamagedLayer => "damaged_layer",
            Finding::DamagedBounds => "damaged_bounds",
            Finding::DamagedDtc => "damaged_dtc",
            Finding::ManifestMismatch => "manifest_mismatch",
            Finding::MissingLayer => "missing_layer",
            Finding::MissingBounds => "missing_bounds",
            Finding::MissingDtc => "missing_dtc",
        }
    }
}

/// Everything a directory's verification found. Serialises (serde) as the document of
/// `oware verify --json` without its `schema_version`; [`to_json`](Self::to_json) adds the
/// outcome and exit code.
#[derive(Debug)]
pub struct DirectoryReport {
    /// The directory verified (its format, ruleset and base).
    pub dir: DatabaseDir,
    /// The layers asked for: `(first, last)`, inclusive.
    pub layers_requested: (u32, u32),
    /// Every layer opened, in increasing order (those below the range that no layer reads are
    /// left out).
    pub layers: Vec<LayerEntry>,
    /// The published facts and what checking them gave.
    pub facts: Vec<FactReport>,
    /// The bounds checked, in increasing order.
    pub bounds: Vec<BoundsEntry>,
    /// The depths to capture checked, in increasing order.
    pub dtc: Vec<DtcEntry>,
    /// The pack manifest's check: `None` when the directory has neither a `SHA256SUMS` nor packs
    /// of the ruleset (or is in the published format); `present: false` for packs without one.
    pub manifest: Option<ManifestCheck>,
    /// Positions re-derived, over all layers.
    pub positions_checked: u64,
    /// Wrong values, over all layers.
    pub mismatches: u64,
    /// Bounds entries checked.
    pub bounds_checked: u64,
    /// Wrong bounds entries.
    pub bounds_mismatches: u64,
    /// Depths to capture checked (positions, over all dtc files checked).
    pub dtc_checked: u64,
    /// Wrong depths to capture.
    pub dtc_mismatches: u64,
    /// Seconds spent re-deriving values (the sum of the layers').
    pub derive_seconds: f64,
    /// Wall-clock seconds of the whole check (facts aside).
    pub seconds: f64,
    /// Whether nothing at all is wrong (no blocked layer either).
    pub ok: bool,
    /// One line: `OK: ...` or `FAILED: ...` naming every problem.
    pub summary: String,
    /// The dominant class of problem.
    pub outcome: Finding,
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl DirectoryReport {
    /// The layers whose values were re-derived: their reports.
    pub(crate) fn layer_reports(&self) -> impl Iterator<Item = &LayerReport> {
        self.layers.iter().filter_map(|e| match &e.status {
            LayerStatus::Checked(r) => Some(r),
            _ => None,
        })
    }

    /// The layers whose depths to capture are in state `status_name` (see
    /// [`CompanionEntry::status_name`]).
    pub fn dtc_in(&self, status_name: &str) -> Vec<u32> {
        layers_in(&self.dtc, status_name)
    }

    /// The layers whose values are in state `status_name` (see [`LayerEntry::status_name`]).
    pub fn layers_in(&self, status_name: &str) -> Vec<u32> {
        self.layers.iter().filter(|e| e.status_name() == status_name).map(|e| e.layer).collect()
    }

    /// The layers whose bounds are in state `status_name` (see [`CompanionEntry::status_name`]).
    pub fn bounds_in(&self, status_name: &str) -> Vec<u32> {
        layers_in(&self.bounds, status_name)
    }

    /// The published facts the layers contradict.
    pub(crate) fn failed_facts(&self) -> impl Iterator<Item = &FactReport> {
        self.facts.iter().filter(|f| f.status == FactStatus::Failed)
    }

    /// Positions re-derived per second of re-derivation.
    pub fn positions_per_second(&self) -> f64 {
        self.positions_checked as f64 / self.derive_seconds.max(1e-9)
    }

    /// The report of these entries, with its totals, `ok`, summary and outcome.
    // One argument per part of the report, in its order: a struct would only rename them.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn tallied(
        dir: DatabaseDir,
        layers_requested: (u32, u32),
        layers: Vec<LayerEntry>,
        facts: Vec<FactReport>,
        bounds: Vec<BoundsEntry>,
        dtc: Vec<DtcEntry>,
        manifest: Option<ManifestCheck>,
        seconds: f64,
    ) -> DirectoryReport {
        let mut report = DirectoryReport {
            dir,
            layers_requested,
            layers,
            facts,
            bounds,
            dtc,
            manifest,
            positions_checked: 0,
            mismatches: 0,
            bounds_checked: 0,
            bounds_mismatches: 0,
            dtc_checked: 0,
            dtc_mismatches: 0,
            derive_seconds: 0.0,
            seconds,
            ok: false,
            summary: String::new(),
            outcome: Finding::Ok,
        };
        report.tally();
        report
    }

    /// The totals, `ok`, the summary and the outcome, from the entries.
    fn tally(&mut self) {
        self.positions_checked = self.layer_reports().map(|r| r.checked).sum();
        self.derive_seconds = self.layer_reports().fold(0.0, |s, r| s + r.seconds);
        self.mismatches = self.layer_reports().map(|r| r.mismatches).sum();
        // The reports of the bounds and of the depths to capture checked.
        let bounds = || self.bounds.iter().filter_map(CompanionEntry::report);
        let dtc = || self.dtc.iter().filter_map(CompanionEntry::report);
        self.bounds_checked = bounds().map(|r| r.checked).sum();
        self.bounds_mismatches = bounds().map(|r| r.mismatches).sum();
        self.dtc_checked = dtc().map(|r| r.checked).sum();
        self.dtc_mismatches = dtc().map(|r| r.mismatches).sum();
        let bad_layers: Vec<u32> = self.layer_reports().filter(|r| !r.is_ok()).map(|r| r.layer).collect();
        let bad_bounds: Vec<u32> = bounds().filter(|r| !r.is_ok()).map(|r| r.layer).collect();
        let (damaged, missing, blocked) = (self.layers_in("damaged"), self.layers_in("missing"), self.layers_in("not-verified"));
        let (damaged_bounds, missing_bounds) = (self.bounds_in("damaged"), self.bounds_in("missing"));
        let bad_dtc: Vec<u32> = dtc().filter(|r| !r.is_ok()).map(|r| r.layer).collect();
        let (damaged_dtc, missing_dtc) = (self.dtc_in("damaged"), self.dtc_in("missing"));
        let failed_facts: Vec<&str> = self.failed_facts().map(|f| f.id).collect();
        let manifest_failed = self.manifest.as_ref().is_some_and(|m| m.error.is_some());
        let (mismatches, bounds_mismatches, dtc_mismatches) = (self.mismatches, self.bounds_mismatches, self.dtc_mismatches);

        let mut problems = Vec::new();
        if mismatches > 0 {
            problems.push(format!("{} wrong value{} in {}", group_digits(mismatches), plural(mismatches), layers_phrase(bad_layers)));
        }
        if bounds_mismatches > 0 {
            let entries = if bounds_mismatches == 1 { "y" } else { "ies" };
            problems.push(format!("{} wrong bounds entr{entries} in {}", group_digits(bounds_mismatches), layers_phrase(bad_bounds)));
        }
        if !damaged_bounds.is_empty() {
            problems.push(format!("damaged or unreadable bounds of {}", layers_phrase(damaged_bounds.iter().copied())));
        }
        if !missing_bounds.is_empty() {
            problems.push(format!("missing bounds of {}", layers_phrase(missing_bounds.iter().copied())));
        }
        if dtc_mismatches > 0 {
            problems.push(format!("{} wrong depth{} to capture in {}", group_digits(dtc_mismatches), plural(dtc_mismatches), layers_phrase(bad_dtc)));
        }
        if !damaged_dtc.is_empty() {
            problems.push(format!("damaged or unreadable depths to capture of {}", layers_phrase(damaged_dtc.iter().copied())));
        }
        if !missing_dtc.is_empty() {
            problems.push(format!("missing depths to capture of {}", layers_phrase(missing_dtc.iter().copied())));
        }
        if !failed_facts.is_empty() {
            problems.push(format!("fact{} contradicted: {}", plural(failed_facts.len() as u64), failed_facts.join(", ")));
        }
        if !damaged.is_empty() {
            problems.push(format!("damaged or unreadable {}", layers_phrase(damaged.iter().copied())));
        }
        if !missing.is_empty() {
            problems.push(format!("missing {}", layers_phrase(missing.iter().copied())));
        }
        if !blocked.is_empty() {
            problems.push(format!("{} not re-derived", layers_phrase(blocked)));
        }
        if manifest_failed {
            problems.push(format!("{} does not match the files", manifest::MANIFEST));
        }
        self.ok = problems.is_empty();
        let (first, last) = self.layers_requested;
        let not_needed = self.layers_in("not-needed");
        self.summary = if self.ok {
            let bounds = if self.bounds_checked > 0 {
                format!("; {} bounds entries checked, every one satisfies its equations and agrees with its value", group_digits(self.bounds_checked))
            } else {
                String::new()
            };
            let dtc = if self.dtc_checked > 0 {
                format!("; {} depths to capture checked, every one follows from its moves", group_digits(self.dtc_checked))
            } else {
                String::new()
            };
            let gap = if not_needed.is_empty() { String::new() } else { format!(" ({} not built, not needed)", layers_phrase(not_needed.iter().copied())) };
            format!(
                "OK: {} of {}{gap}: {} positions re-derived, every value follows from its children{bounds}{dtc}; no fact contradicted",
                layers_phrase((first..=last).filter(|n| !not_needed.contains(n))),
                self.dir.rules(),
                group_digits(self.positions_checked)
            )
        } else {
            format!("FAILED: {}", problems.join("; "))
        };

        // Wrong values first, then damaged files, then missing layers.
        self.outcome = if mismatches > 0 || bounds_mismatches > 0 || dtc_mismatches > 0 || !failed_facts.is_empty() {
            Finding::WrongValues
        } else if !damaged.is_empty() {
            Finding::DamagedLayer
        } else if !damaged_bounds.is_empty() {
            Finding::DamagedBounds
        } else if !damaged_dtc.is_empty() {
            Finding::DamagedDtc
        } else if manifest_failed {
            Finding::ManifestMismatch
        } else if !missing.is_empty() {
            Finding::MissingLayer
        } else if !missing_bounds.is_empty() {
            Finding::MissingBounds
        } else if !missing_dtc.is_empty() {
            Finding::MissingDtc
        } else {
            Finding::Ok
        };
    }

    /// The error the outcome stands for (`None` for [`Finding::Ok`]): [`Error::VerifyFailed`]
    /// for wrong values; the first damaged layer's (then bounds', then dtc's) error; the
    /// manifest's error; [`DatabaseDir::missing`] of the first missing layer;
    /// [`Error::BoundsMissing`] of the first missing bounds; [`Error::DtcMissing`] of the first
    /// missing depths to capture. Its kind's [`ErrorKind::exit_status`] is the exit status of `oware verify`.
    ///
    /// Cost: moves the error out of the report.
    pub fn into_error(self) -> Option<Error> {
        let failed_facts = self.failed_facts().count() as u64;
        let first_of = |names: Vec<u32>| names.first().copied();
        match self.outcome {
            Finding::Ok => None,
            Finding::WrongValues => {
                Some(Error::VerifyFailed { wrong_values: self.mismatches, wrong_bounds: self.bounds_mismatches, wrong_dtc: self.dtc_mismatches, failed_facts })
            }
            Finding::DamagedLayer => self.layers.into_iter().find_map(|e| match e.status {
                LayerStatus::Damaged(e) => Some(e),
                _ => None,
            }),
            Finding::DamagedBounds => self.bounds.into_iter().find_map(CompanionEntry::into_damage),
            Finding::DamagedDtc => self.dtc.into_iter().find_map(CompanionEntry::into_damage),
            Finding::ManifestMismatch => self.manifest.and_then(|m| m.error),
            Finding::MissingLayer => first_of(self.layers_in("missing")).map(|n| self.dir.missing(n)),
            Finding::MissingBounds => {
                first_of(self.bounds_in("missing")).map(|n| Error::BoundsMissing { layer: n, dir: self.dir.layers_dir(), rules: self.dir.rules() })
            }
            Finding::MissingDtc => {
                first_of(self.dtc_in("missing")).map(|n| Error::DtcMissing { layer: n, dir: self.dir.layers_dir(), rules: self.dir.rules() })
            }
        }
    }

    /// The exit status of `oware verify` for this report: 0, or the exit code of
    /// [`into_error`](Self::into_error)'s error (8 wrong values, 5 damaged, 6 foreign file,
    /// 7 unreadable, 4 missing).
    pub fn exit_code(&self) -> i32 {
        match self.outcome {
            Finding::Ok => 0,
            Finding::WrongValues => ErrorKind::VerificationFailed.exit_status(),
            Finding::DamagedLayer | Finding::DamagedBounds | Finding::DamagedDtc | Finding::ManifestMismatch => {
                self.damage().map_or(ErrorKind::Internal, Error::kind).exit_status()
            }
            Finding::MissingLayer => self.dir.missing(0).kind().exit_status(),
            Finding::MissingBounds => ErrorKind::BoundsMissing.exit_status(),
            Finding::MissingDtc => ErrorKind::DtcMissing.exit_status(),
        }
    }

    /// The error of the first damaged file of the outcome's class (layers, bounds, dtc,
    /// manifest).
    fn damage(&self) -> Option<&Error> {
        match self.outcome {
            Finding::DamagedLayer => self.layers.iter().find_map(|e| match &e.status {
                LayerStatus::Damaged(e) => Some(e),
                _ => None,
            }),
            Finding::DamagedBounds => self.bounds.iter().find_map(CompanionEntry::damage),
            Finding::DamagedDtc => self.dtc.iter().find_map(CompanionEntry::damage),
            Finding::ManifestMismatch => self.manifest.as_ref().and_then(|m| m.error.as_ref()),
            _ => None,
        }
    }

    /// The report as one line of JSON: the document of `oware verify --json` without its
    /// `schema_version`, plus `outcome` ([`Finding::name`]) and `exit_code`.
    ///
    /// # Errors
    /// [`Error::Internal`] if it cannot be serialised (not expected).
    pub fn to_json(&self) -> Result<String> {
        #[derive(Serialize)]
        struct Doc<'a> {
            #[serde(flatten)]
            report: &'a DirectoryReport,
            outcome: Finding,
            exit_code: i32,
        }
        serde_json::to_string(&Doc { report: self, outcome: self.outcome, exit_code: self.exit_code() })
            .map_err(|e| Error::Internal(format!("JSON output: {e}")))
    }
}

// ---------------------------------------------------------------------------------------------
// The JSON document (the fields and their order are those of `oware verify --json`).

/// One layer in the JSON document.
#[derive(Serialize)]
struct LayerDoc<'a> {
    layer: u32,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    checked: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mismatches: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    positions_per_second: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_mismatches: Option<&'a [Mismatch]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    needs: Option<&'a [u32]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorDoc<'static>>,
}

impl Serialize for LayerEntry {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut d = LayerDoc {
            layer: self.layer,
            status: self.status_name(),
            checked: None,
            mismatches: None,
            seconds: None,
            positions_per_second: None,
            first_mismatches: None,
            needs: None,
            error: None,
        };
        match &self.status {
            LayerStatus::Dependency | LayerStatus::NotNeeded => {}
            LayerStatus::Checked(r) => {
                d.checked = Some(r.checked);
                d.mismatches = Some(r.mismatches);
                d.seconds = Some(r.seconds);
                d.positions_per_second = Some(r.positions_per_second());
                d.first_mismatches = Some(&r.first_mismatches);
            }
            LayerStatus::Blocked { needs } => d.needs = Some(needs),
            LayerStatus::Damaged(e) | LayerStatus::Missing(e) => d.error = Some(ErrorDoc::of(e)),
        }
        d.serialize(s)
    }
}

/// `manifest` in the JSON document.
#[derive(Serialize)]
struct ManifestDoc {
    path: String,
    present: bool,
    files_matched: usize,
    error: Option<ErrorDoc<'static>>,
}

impl Serialize for DirectoryReport {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut d = s.serialize_struct("DirectoryReport", 19)?;
        d.serialize_field("rules", self.dir.rules().name())?;
        d.serialize_field("dir", &self.dir.layers_dir().display().to_string())?;
        d.serialize_field("format", self.dir.format().name())?;
        d.serialize_field("layers_requested", &[self.layers_requested.0, self.layers_requested.1])?;
        d.serialize_field("layers", &self.layers)?;
        d.serialize_field("facts", &self.facts)?;
        d.serialize_field("positions_checked", &self.positions_checked)?;
        d.serialize_field("mismatches", &self.mismatches)?;
        d.serialize_field("seconds", &self.seconds)?;
        d.serialize_field("positions_per_second", &self.positions_per_second())?;
        d.serialize_field("bounds", &self.bounds)?;
        d.serialize_field("bounds_checked", &self.bounds_checked)?;
        d.serialize_field("bounds_mismatches", &self.bounds_mismatches)?;
        d.serialize_field("dtc", &self.dtc)?;
        d.serialize_field("dtc_checked", &self.dtc_checked)?;
        d.serialize_field("dtc_mismatches", &self.dtc_mismatches)?;
        let manifest = self.manifest.as_ref().map(|m| ManifestDoc {
            path: m.path.display().to_string(),
            present: m.present,
            files_matched: m.files_matched,
            error: m.error.as_ref().map(ErrorDoc::of),
        });
        d.serialize_field("manifest", &manifest)?;
        d.serialize_field("ok", &self.ok)?;
        d.serialize_field("summary", &self.summary)?;
        d.end()
    }
}

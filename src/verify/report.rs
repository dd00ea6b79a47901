//! The report of a directory's verification ([`super::directory::verify_directory`]): what
//! became of each layer, of the files beside it of every kind (its bounds, its depths to
//! capture), the published facts and the pack manifest, the totals, a one-line summary and the
//! [`Finding`], the class of problem that dominates (the exit status of `oware verify`). Plain
//! data; it serialises as the document of `oware verify --json`.

use std::path::PathBuf;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::facts::{FactReport, FactStatus};
use super::manifest;
use crate::error::{Error, ErrorDoc, ErrorKind, FileContent, Result};
use crate::rules::Board;
use crate::storage::{DatabaseDir, ValuesKind};
use crate::units::{group_digits, layers_phrase};
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Finding {
    /// Every file intact, every value, bounds entry and depth to capture follows from its
    /// children, no fact contradicted, the manifest (if any) matches.
    Ok,
    /// Some value, bounds entry or depth to capture is wrong, or a published fact is
    /// contradicted.
    WrongValues,
    /// A file of this kind (a layer's values first, then the files beside them, kind by kind)
    /// is damaged, foreign or unreadable.
    Damaged(FileContent),
    /// The pack manifest does not match the files.
    ManifestMismatch,
    /// A layer asked for is absent ([`FileContent::Values`]), or else a file beside it that
    /// [`VerifyOptions::require`](crate::verify::VerifyOptions::require) requires.
    Missing(FileContent),
}

impl Finding {
    /// `ok`, `wrong_values`, `damaged_layer`, `damaged_bounds`, `damaged_dtc`,
    /// `manifest_mismatch`, `missing_layer`, `missing_bounds` or `missing_dtc` (`damaged_` or
    /// `missing_` and the kind's [`name`](FileContent::name)).
    pub fn name(self) -> String {
        match self {
            Finding::Ok => "ok".into(),
            Finding::WrongValues => "wrong_values".into(),
            Finding::Damaged(kind) => format!("damaged_{}", kind.name()),
            Finding::ManifestMismatch => "manifest_mismatch".into(),
            Finding::Missing(kind) => format!("missing_{}", kind.name()),
        }
    }
}

impl Serialize for Finding {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
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
    /// The files beside the values checked: those of each kind in increasing layer order, the
    /// kinds in the order of `FileContent::COMPANIONS` (bounds, then depths to capture).
    pub companions: Vec<CompanionEntry>,
    /// The pack manifest's check: `None` when the directory has neither a `SHA256SUMS` nor packs
    /// of the ruleset (or is in the published format); `present: false` for packs without one.
    pub manifest: Option<ManifestCheck>,
    /// Positions re-derived, over all layers.
    pub positions_checked: u64,
    /// Wrong values, over all layers.
    pub mismatches: u64,
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

    /// The entries of the files of kind `kind` beside the values.
    pub(crate) fn companions_of(&self, kind: FileContent) -> impl Iterator<Item = &CompanionEntry> {
        self.companions.iter().filter(move |e| e.kind == kind)
    }

    /// The layers whose values (`kind` [`FileContent::Values`], see [`LayerEntry::status_name`])
    /// or whose files of kind `kind` (see [`CompanionEntry::status_name`]) are in state
    /// `status_name`.
    pub fn layers_in(&self, kind: FileContent, status_name: &str) -> Vec<u32> {
        match kind {
            FileContent::Values => self.layers.iter().filter(|e| e.status_name() == status_name).map(|e| e.layer).collect(),
            _ => self.companions_of(kind).filter(|e| e.status_name() == status_name).map(|e| e.layer).collect(),
        }
    }

    /// Entries checked of kind `kind` (for the values, positions re-derived) and, of them,
    /// those that do not follow from their children or moves.
    pub fn tally(&self, kind: FileContent) -> (u64, u64) {
        match kind {
            FileContent::Values => (self.positions_checked, self.mismatches),
            _ => self.companions_of(kind).filter_map(CompanionEntry::report).map(|r| r.tally()).fold((0, 0), |(c, m), (a, b)| (c + a, m + b)),
        }
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
    pub(crate) fn tallied(
        dir: DatabaseDir,
        layers_requested: (u32, u32),
        layers: Vec<LayerEntry>,
        facts: Vec<FactReport>,
        companions: Vec<CompanionEntry>,
        manifest: Option<ManifestCheck>,
        seconds: f64,
    ) -> DirectoryReport {
        let mut report = DirectoryReport {
            dir,
            layers_requested,
            layers,
            facts,
            companions,
            manifest,
            positions_checked: 0,
            mismatches: 0,
            derive_seconds: 0.0,
            seconds,
            ok: false,
            summary: String::new(),
            outcome: Finding::Ok,
        };
        report.tally_all();
        report
    }

    /// The totals, `ok`, the summary and the outcome, from the entries.
    fn tally_all(&mut self) {
        use FileContent::Values;
        self.positions_checked = self.layer_reports().map(|r| r.checked).sum();
        self.derive_seconds = self.layer_reports().fold(0.0, |s, r| s + r.seconds);
        self.mismatches = self.layer_reports().map(|r| r.mismatches).sum();
        let bad_layers: Vec<u32> = self.layer_reports().filter(|r| !r.is_ok()).map(|r| r.layer).collect();
        let (damaged, missing, blocked) = (self.layers_in(Values, "damaged"), self.layers_in(Values, "missing"), self.layers_in(Values, "not-verified"));
        let failed_facts: Vec<&str> = self.failed_facts().map(|f| f.id).collect();
        let manifest_failed = self.manifest.as_ref().is_some_and(|m| m.error.is_some());
        let mismatches = self.mismatches;

        let mut problems = Vec::new();
        if mismatches > 0 {
            problems.push(format!("{} wrong {} in {}", group_digits(mismatches), Values.entries(mismatches), layers_phrase(bad_layers)));
        }
        // The files beside the values, kind by kind: wrong entries, then damaged files, then
        // missing ones.
        let mut wrong_entries = false;
        for &kind in FileContent::COMPANIONS {
            let wrong = self.tally(kind).1;
            wrong_entries |= wrong > 0;
            if wrong > 0 {
                let bad: Vec<u32> = self.companions_of(kind).filter_map(CompanionEntry::report).filter(|r| !r.is_ok()).map(|r| r.layer()).collect();
                problems.push(format!("{} wrong {} in {}", group_digits(wrong), kind.entries(wrong), layers_phrase(bad)));
            }
            let damaged = self.layers_in(kind, "damaged");
            if !damaged.is_empty() {
                problems.push(format!("damaged or unreadable {} of {}", kind.what(), layers_phrase(damaged)));
            }
            let missing = self.layers_in(kind, "missing");
            if !missing.is_empty() {
                problems.push(format!("missing {} of {}", kind.what(), layers_phrase(missing)));
            }
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
        let not_needed = self.layers_in(Values, "not-needed");
        self.summary = if self.ok {
            let companions: String = FileContent::COMPANIONS
                .iter()
                .copied()
                .filter_map(|kind| {
                    let checked = self.tally(kind).0;
                    (checked > 0).then(|| format!("; {} {} checked, every one {}", group_digits(checked), kind.entries(0), kind.checked_claim()))
                })
                .collect();
            let gap = if not_needed.is_empty() { String::new() } else { format!(" ({} not built, not needed)", layers_phrase(not_needed.iter().copied())) };
            format!(
                "OK: {} of {}{gap}: {} positions re-derived, every value follows from its children{companions}; no fact contradicted",
                layers_phrase((first..=last).filter(|n| !not_needed.contains(n))),
                self.dir.rules(),
                group_digits(self.positions_checked)
            )
        } else {
            format!("FAILED: {}", problems.join("; "))
        };

        // Wrong values first, then damaged files (layers, then kind by kind), then missing ones.
        let kinds = || FileContent::all();
        self.outcome = if mismatches > 0 || wrong_entries || !failed_facts.is_empty() {
            Finding::WrongValues
        } else if let Some(kind) = kinds().find(|&k| !self.layers_in(k, "damaged").is_empty()) {
            Finding::Damaged(kind)
        } else if manifest_failed {
            Finding::ManifestMismatch
        } else if let Some(kind) = kinds().find(|&k| !self.layers_in(k, "missing").is_empty()) {
            Finding::Missing(kind)
        } else {
            Finding::Ok
        };
    }

    /// The error the outcome stands for (`None` for [`Finding::Ok`]): [`Error::VerifyFailed`]
    /// for wrong values; the first damaged layer's (then bounds', then dtc's) error; the
    /// manifest's error; [`DatabaseDir::missing`] of the first missing layer, or of the first
    /// missing file of the kind required ([`Error::CompanionMissing`]). Its kind's
    /// [`ErrorKind::exit_status`] is the exit status of `oware verify`.
    ///
    /// Cost: moves the error out of the report.
    pub fn into_error(self) -> Option<Error> {
        let failed_facts = self.failed_facts().count() as u64;
        match self.outcome {
            Finding::Ok => None,
            Finding::WrongValues => {
                let wrong = FileContent::all().map(|k| (k, self.tally(k).1)).collect();
                Some(Error::VerifyFailed { wrong, failed_facts })
            }
            Finding::Damaged(FileContent::Values) => self.layers.into_iter().find_map(|e| match e.status {
                LayerStatus::Damaged(e) => Some(e),
                _ => None,
            }),
            Finding::Damaged(kind) => self.companions.into_iter().filter(|e| e.kind == kind).find_map(CompanionEntry::into_damage),
            Finding::ManifestMismatch => self.manifest.and_then(|m| m.error),
            Finding::Missing(kind) => self.layers_in(kind, "missing").first().map(|&n| match kind {
                FileContent::Values => self.dir.missing::<ValuesKind>(n),
                kind => Error::CompanionMissing { kind, layer: n, dir: self.dir.layers_dir(), rules: self.dir.rules() },
            }),
        }
    }

    /// The exit status of `oware verify` for this report: 0, or the exit code of
    /// [`into_error`](Self::into_error)'s error (8 wrong values, 5 damaged, 6 foreign file,
    /// 7 unreadable, 4 missing).
    pub fn exit_code(&self) -> i32 {
        match self.outcome {
            Finding::Ok => 0,
            Finding::WrongValues => ErrorKind::VerificationFailed.exit_status(),
            Finding::Damaged(_) | Finding::ManifestMismatch => self.damage().map_or(ErrorKind::Internal, Error::kind).exit_status(),
            Finding::Missing(kind) => kind.missing_kind().exit_status(),
        }
    }

    /// The error of the first damaged file of the outcome's class (layers, a kind of file
    /// beside them, manifest).
    fn damage(&self) -> Option<&Error> {
        match self.outcome {
            Finding::Damaged(FileContent::Values) => self.layers.iter().find_map(|e| match &e.status {
                LayerStatus::Damaged(e) => Some(e),
                _ => None,
            }),
            Finding::Damaged(kind) => self.companions_of(kind).find_map(CompanionEntry::damage),
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
        let mut d = s.serialize_map(None)?;
        d.serialize_entry("rules", self.dir.rules().name())?;
        d.serialize_entry("dir", &self.dir.layers_dir().display().to_string())?;
        d.serialize_entry("format", self.dir.format().name())?;
        d.serialize_entry("layers_requested", &[self.layers_requested.0, self.layers_requested.1])?;
        d.serialize_entry("layers", &self.layers)?;
        d.serialize_entry("facts", &self.facts)?;
        d.serialize_entry("positions_checked", &self.positions_checked)?;
        d.serialize_entry("mismatches", &self.mismatches)?;
        d.serialize_entry("seconds", &self.seconds)?;
        d.serialize_entry("positions_per_second", &self.positions_per_second())?;
        // Each kind of file beside the values: its entries, then its totals (`bounds`,
        // `bounds_checked`, `bounds_mismatches`, then `dtc`, ...).
        for &kind in FileContent::COMPANIONS {
            let entries: Vec<&CompanionEntry> = self.companions_of(kind).collect();
            let (checked, mismatches) = self.tally(kind);
            d.serialize_entry(kind.name(), &entries)?;
            d.serialize_entry(&format!("{}_checked", kind.name()), &checked)?;
            d.serialize_entry(&format!("{}_mismatches", kind.name()), &mismatches)?;
        }
        let manifest = self.manifest.as_ref().map(|m| ManifestDoc {
            path: m.path.display().to_string(),
            present: m.present,
            files_matched: m.files_matched,
            error: m.error.as_ref().map(ErrorDoc::of),
        });
        d.serialize_entry("manifest", &manifest)?;
        d.serialize_entry("ok", &self.ok)?;
        d.serialize_entry("summary", &self.summary)?;
        d.end()
    }
}

/// The report of checking one layer's file beside its values, of its kind: what
/// [`CompanionStatus::Checked`] holds.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CompanionReport {
    /// Forced-capture bounds.
    Bounds(BoundsReport),
    /// Depths to capture.
    Dtc(DtcReport),
    /// A kind with no report of its own: its mismatches in words.
    Entries(EntriesReport),
}

/// The result of checking every entry of one layer's file of a kind with no report of its own
/// ([`CompanionReport::Entries`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EntriesReport {
    /// What the file holds.
    #[serde(skip)]
    pub kind: FileContent,
    /// Layer number.
    pub layer: u32,
    /// Positions checked: the whole layer.
    pub checked: u64,
    /// Positions whose entry does not follow from its moves.
    pub mismatches: u64,
    /// The first [`MISMATCHES_KEPT`](super::MISMATCHES_KEPT) of them in index order.
    pub first_mismatches: Vec<EntryMismatch>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// A position whose entry does not follow from its moves, in an [`EntriesReport`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EntryMismatch {
    /// Its index in the layer.
    pub index: u64,
    /// The board, mover-first.
    pub board: Board,
    /// The stored entry, in words.
    pub stored: String,
    /// What its moves give, in words.
    pub derived: String,
}

impl From<EntriesReport> for CompanionReport {
    fn from(r: EntriesReport) -> CompanionReport {
        CompanionReport::Entries(r)
    }
}

impl From<BoundsReport> for CompanionReport {
    fn from(r: BoundsReport) -> CompanionReport {
        CompanionReport::Bounds(r)
    }
}

impl From<DtcReport> for CompanionReport {
    fn from(r: DtcReport) -> CompanionReport {
        CompanionReport::Dtc(r)
    }
}

impl CompanionReport {
    /// What the file checked holds.
    pub fn kind(&self) -> FileContent {
        match self {
            CompanionReport::Bounds(_) => FileContent::Bounds,
            CompanionReport::Dtc(_) => FileContent::Dtc,
            CompanionReport::Entries(r) => r.kind,
        }
    }

    /// The layer.
    pub fn layer(&self) -> u32 {
        match self {
            CompanionReport::Bounds(r) => r.layer,
            CompanionReport::Dtc(r) => r.layer,
            CompanionReport::Entries(r) => r.layer,
        }
    }

    /// Positions checked (the whole layer) and, of them, those whose entry does not follow
    /// from its moves (or contradicts its value).
    pub fn tally(&self) -> (u64, u64) {
        match self {
            CompanionReport::Bounds(r) => (r.checked, r.mismatches),
            CompanionReport::Dtc(r) => (r.checked, r.mismatches),
            CompanionReport::Entries(r) => (r.checked, r.mismatches),
        }
    }

    /// Wall-clock seconds of the check.
    pub fn seconds(&self) -> f64 {
        match self {
            CompanionReport::Bounds(r) => r.seconds,
            CompanionReport::Dtc(r) => r.seconds,
            CompanionReport::Entries(r) => r.seconds,
        }
    }

    /// True when every entry follows from its moves.
    pub fn is_ok(&self) -> bool {
        self.tally().1 == 0
    }

    /// Writes what follows `mismatches` in the report's part of the JSON document: what the
    /// kind adds, then `first_mismatches`.
    fn serialize_rest<M: SerializeMap>(&self, map: &mut M) -> std::result::Result<(), M::Error> {
        match self {
            CompanionReport::Bounds(r) => map.serialize_entry("first_mismatches", &r.first_mismatches),
            CompanionReport::Dtc(r) => {
                if let Some(d) = r.greatest_depth {
                    map.serialize_entry("greatest_depth", &d)?;
                }
                map.serialize_entry("escaped", &r.escaped)?;
                map.serialize_entry("first_mismatches", &r.first_mismatches)
            }
            CompanionReport::Entries(r) => map.serialize_entry("first_mismatches", &r.first_mismatches),
        }
    }
}

/// What became of one layer's file beside its values.
#[derive(Debug)]
pub enum CompanionStatus {
    /// Checked: the report.
    Checked(CompanionReport),
    /// Intact (header and checksum) but not checked: below the range, or a layer it reads (its
    /// values, or what the check reads of a smaller layer) is missing or damaged.
    Unchecked,
    /// Damaged (a bad header, size or checksum; for depths to capture, a depth that contradicts
    /// its value or a malformed table of escaped depths), foreign or unreadable: the error.
    Damaged(Error),
    /// Absent while [`VerifyOptions::require`](crate::verify::VerifyOptions::require) asked for
    /// it: the error ([`Error::CompanionMissing`]).
    Missing(Error),
}

/// One layer's file beside its values in a [`DirectoryReport`](super::DirectoryReport).
#[derive(Debug)]
pub struct CompanionEntry {
    /// What the file holds.
    pub kind: FileContent,
    /// The layer.
    pub layer: u32,
    /// What was found.
    pub status: CompanionStatus,
}

impl CompanionEntry {
    /// `ok`, `mismatch`, `not-verified`, `damaged` or `missing`.
    pub fn status_name(&self) -> &'static str {
        match &self.status {
            CompanionStatus::Checked(r) if r.is_ok() => "ok",
            CompanionStatus::Checked(_) => "mismatch",
            CompanionStatus::Unchecked => "not-verified",
            CompanionStatus::Damaged(_) => "damaged",
            CompanionStatus::Missing(_) => "missing",
        }
    }

    /// The report, when the file was checked.
    pub fn report(&self) -> Option<&CompanionReport> {
        match &self.status {
            CompanionStatus::Checked(r) => Some(r),
            _ => None,
        }
    }

    /// The error, when the file is damaged.
    pub(super) fn damage(&self) -> Option<&Error> {
        match &self.status {
            CompanionStatus::Damaged(e) => Some(e),
            _ => None,
        }
    }

    /// The error, when the file is damaged (moved out of the entry).
    pub(super) fn into_damage(self) -> Option<Error> {
        match self.status {
            CompanionStatus::Damaged(e) => Some(e),
            _ => None,
        }
    }
}

/// One layer's file in the JSON document: `layer`, `status`, then the report's fields or the
/// `error`.
impl Serialize for CompanionEntry {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut d = s.serialize_map(None)?;
        d.serialize_entry("layer", &self.layer)?;
        d.serialize_entry("status", self.status_name())?;
        match &self.status {
            CompanionStatus::Checked(r) => {
                let (checked, mismatches) = r.tally();
                d.serialize_entry("checked", &checked)?;
                d.serialize_entry("mismatches", &mismatches)?;
                r.serialize_rest(&mut d)?;
            }
            CompanionStatus::Unchecked => {}
            CompanionStatus::Damaged(e) | CompanionStatus::Missing(e) => d.serialize_entry("error", &ErrorDoc::of(e))?,
        }
        d.end()
    }
}

//! Where calibrations are kept: a small JSON file, one entry per model × engine × version × GPU
//! (a newer log of the same key replaces the older one).
//!
//! Location: the file the user names, else `VRAMFIT_CALIBRATION`, else
//! `$XDG_CONFIG_HOME/vramfit/calibrations.json`, else `$HOME/.config/vramfit/calibrations.json`.
//! `VRAMFIT_CALIBRATION=off` turns stored calibrations off.

use super::{model_stem, Calibration};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Store {
    /// format version
    pub version: u32,
    pub calibrations: Vec<Calibration>,
}

/// The default store file (None: no home directory, or `VRAMFIT_CALIBRATION=off`).
pub fn default_path() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("VRAMFIT_CALIBRATION") {
        if p.eq_ignore_ascii_case("off") || p.is_empty() {
            return None;
        }
        return Some(PathBuf::from(p));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("vramfit").join("calibrations.json"))
}

/// The identity a calibration is stored and looked up by.
pub fn key(c: &Calibration) -> String {
    let gpu = match (&c.gpu_name, c.gpu_total_bytes) {
        (Some(n), _) => n.clone(),
        (None, Some(t)) => format!("{:.1}GiB", t as f64 / (1u64 << 30) as f64),
        (None, None) => "unknown GPU".into(),
    };
    format!(
        "{} {} {} on {}",
        model_stem(&c.model),
        c.engine,
        c.engine_version.as_deref().unwrap_or("any version"),
        gpu
    )
}

/// Read a store; a missing file is an empty store.
pub fn load(path: &Path) -> Result<Store, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Store::default()),
        Err(e) => return Err(format!("cannot read calibrations {}: {e}", path.display())),
    };
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "calibrations file {} is not vramfit's format ({e}): remove it or name another with --calibration",
            path.display()
        )
    })
}

/// Add (or replace by key) and write back.
pub fn save(path: &Path, c: Calibration) -> Result<Store, String> {
    let mut store = load(path)?;
    let k = key(&c);
    store.calibrations.retain(|x| key(x) != k);
    store.calibrations.push(c);
    store.version = 1;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(&store).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n")
        .map_err(|e| format!("cannot write calibrations {}: {e}", path.display()))?;
    Ok(store)
}

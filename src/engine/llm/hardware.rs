//! What the machine can run: total RAM (sysinfo, capped by a cgroup limit inside
//! containers) and GPUs with their VRAM (best effort: `nvidia-smi` when it is on
//! PATH). Detection never fails: what cannot be read is reported as unknown and
//! recommendations stay conservative.
//!
//! `DOCDEX_HARDWARE` replaces detection, for tests and for machines whose
//! detection is wrong: `ram_gb=12` or `ram_gb=64,vram_gb=24` (`gpu=Name` optional).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Environment variable that replaces hardware detection.
pub const HARDWARE_ENV: &str = "DOCDEX_HARDWARE";
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// One GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Gpu {
    /// As the driver names it.
    pub name: String,
    /// Video memory in GiB (0 when unknown).
    pub vram_gb: f64,
}

/// The machine as far as model choice cares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Hardware {
    /// Total RAM in GiB usable by this process (0 when unknown).
    pub ram_gb: f64,
    /// GPUs found (empty: CPU only, or not detectable).
    pub gpus: Vec<Gpu>,
    /// `detected`, or `DOCDEX_HARDWARE` when overridden.
    pub source: String,
    /// What could not be determined.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Hardware {
    /// A machine with `ram_gb` and, when `vram_gb > 0`, one GPU (tests and overrides).
    pub fn new(ram_gb: f64, vram_gb: f64) -> Hardware {
        let gpus = if vram_gb > 0.0 { vec![Gpu { name: "GPU".into(), vram_gb }] } else { Vec::new() };
        Hardware { ram_gb, gpus, source: "given".into(), notes: Vec::new() }
    }

    /// True when a GPU was found.
    pub fn has_gpu(&self) -> bool {
        !self.gpus.is_empty()
    }

    /// The largest GPU's VRAM in GiB (0 without one).
    pub fn max_vram_gb(&self) -> f64 {
        self.gpus.iter().map(|g| g.vram_gb).fold(0.0, f64::max)
    }
}

/// Detects the hardware, or reads `DOCDEX_HARDWARE` when set.
pub fn detect() -> Hardware {
    if let Ok(v) = std::env::var(HARDWARE_ENV) {
        match parse_override(&v) {
            Ok(hw) => return hw,
            Err(e) => tracing::warn!("{HARDWARE_ENV}: {e}; detecting instead"),
        }
    }
    let mut notes = Vec::new();
    let ram_gb = match detect_ram() {
        Some(b) => round1(b as f64 / GIB),
        None => {
            notes.push("total RAM could not be read".to_string());
            0.0
        }
    };
    let gpus = match which("nvidia-smi") {
        Some(smi) => match run_with_timeout(
            &smi,
            &["--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
            Duration::from_secs(5),
        ) {
            Some(out) => parse_nvidia_smi(&out),
            None => {
                notes.push("nvidia-smi is present but did not answer; GPU treated as absent".to_string());
                Vec::new()
            }
        },
        None => Vec::new(),
    };
    Hardware { ram_gb, gpus, source: "detected".into(), notes }
}

fn detect_ram() -> Option<u64> {
    let mut sys = sysinfo::System::new().ok()?;
    sys.refresh_memory();
    let total = sys.total_memory();
    let limited = sys.cgroup_limits().map(|c| c.total_memory).filter(|t| *t > 0 && *t < total);
    let bytes = limited.unwrap_or(total);
    (bytes > 0).then_some(bytes)
}

/// Parses `ram_gb=N[,vram_gb=M][,gpu=Name]`.
pub fn parse_override(s: &str) -> Result<Hardware, String> {
    let mut ram = None;
    let mut vram = 0.0;
    let mut name = "GPU".to_string();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').ok_or_else(|| format!("{part:?} is not key=value"))?;
        let num =
            || v.trim().trim_end_matches(['G', 'g']).parse::<f64>().map_err(|_| format!("{k}={v:?} is not a number"));
        match k.trim() {
            "ram_gb" | "ram" => ram = Some(num()?),
            "vram_gb" | "vram" => vram = num()?,
            "gpu" => name = v.trim().to_string(),
            other => return Err(format!("unknown key {other:?} (use ram_gb, vram_gb, gpu)")),
        }
    }
    let ram_gb = ram.ok_or("ram_gb is required, e.g. ram_gb=16")?;
    let mut hw = Hardware::new(ram_gb, vram);
    if let Some(g) = hw.gpus.first_mut() {
        g.name = name;
    }
    hw.source = HARDWARE_ENV.into();
    Ok(hw)
}

/// Parses `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits` (MiB).
pub fn parse_nvidia_smi(out: &str) -> Vec<Gpu> {
    out.lines()
        .filter_map(|l| {
            let (name, mib) = l.rsplit_once(',')?;
            let mib: f64 = mib.trim().parse().ok()?;
            Some(Gpu { name: name.trim().to_string(), vram_gb: round1(mib / 1024.0) })
        })
        .collect()
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// The first executable called `name` on PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// Runs a program and returns its stdout, or `None` on failure, after `limit` or past 1 MiB
/// of output (read while it runs, so a chatty program cannot stall on a full pipe).
fn run_with_timeout(program: &Path, args: &[&str], limit: Duration) -> Option<String> {
    use crate::engine::process::{output_within, Bounds};
    let bounds = Bounds { time: limit, stdout_bytes: 1024 * 1024 };
    let out = output_within(std::process::Command::new(program).args(args), bounds).ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_smi_output_is_parsed() {
        let gpus = parse_nvidia_smi("NVIDIA GeForce RTX 4090, 24564\nTesla T4, 15360\n\ngarbage\n");
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].name, "NVIDIA GeForce RTX 4090");
        assert_eq!(gpus[0].vram_gb, 24.0);
        assert_eq!(gpus[1].vram_gb, 15.0);
    }

    #[test]
    fn overrides_parse_and_reject_nonsense() {
        let hw = parse_override("ram_gb=64, vram_gb=24G, gpu=RTX").unwrap();
        assert_eq!(hw.ram_gb, 64.0);
        assert!(hw.has_gpu());
        assert_eq!(hw.gpus[0].name, "RTX");
        assert_eq!(hw.source, HARDWARE_ENV);
        assert!(!parse_override("ram_gb=6").unwrap().has_gpu());
        assert!(parse_override("vram_gb=8").is_err());
        assert!(parse_override("ram_gb=lots").is_err());
        assert!(parse_override("cpu=9").is_err());
    }

    #[test]
    fn detection_reads_some_ram_here() {
        let hw = detect();
        if std::env::var(HARDWARE_ENV).is_err() {
            assert!(hw.ram_gb > 0.0, "{hw:?}");
        }
    }
}

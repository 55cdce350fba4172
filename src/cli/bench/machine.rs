//! What the bench says about the machine and this process: CPU model, cores, memory,
//! peak RSS, CPU time, and how busy other processes kept the CPU meanwhile.

use serde::Serialize;
use std::time::SystemTime;

/// The machine the figures come from.
#[derive(Debug, Serialize)]
pub(super) struct Machine {
    pub(super) cpu: String,
    pub(super) cores: usize,
    pub(super) ram_gib: f64,
    pub(super) kernel: String,
}

/// CPU time (user + system) of this process, all threads, in seconds.
pub(super) fn process_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we own.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0.0;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// A `kB` field of `/proc/self/status` (`VmHWM:`, `VmRSS:`).
pub(super) fn proc_status_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// Resets this process's peak RSS (Linux: writing 5 to `clear_refs`).
pub(super) fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Machine-wide and own CPU ticks, to tell how busy other processes kept the machine.
pub(super) struct CpuSnapshot {
    pub(super) busy: u64,
    pub(super) total: u64,
    pub(super) own: u64,
}

impl CpuSnapshot {
    pub(super) fn take() -> Option<CpuSnapshot> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let nums: Vec<u64> =
            stat.lines().next()?.split_whitespace().skip(1).take(8).filter_map(|v| v.parse().ok()).collect();
        let idle = nums.get(3)? + nums.get(4)?;
        let total: u64 = nums.iter().sum();
        let own = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the `(comm)`: utime, stime, cutime, cstime are the 12th to 15th.
        let rest = own.rsplit_once(')')?.1;
        let own: u64 = rest.split_whitespace().skip(11).take(4).filter_map(|v| v.parse::<u64>().ok()).sum();
        Some(CpuSnapshot { busy: total - idle, total, own })
    }

    /// Other processes' share of the machine's CPU between `self` and `later`, in percent.
    pub(super) fn others_pct(&self, later: &CpuSnapshot) -> f64 {
        let busy = later.busy.saturating_sub(self.busy);
        let own = later.own.saturating_sub(self.own);
        let total = later.total.saturating_sub(self.total).max(1);
        100.0 * busy.saturating_sub(own) as f64 / total as f64
    }
}

pub(super) fn kib_to_mib(k: u64) -> f64 {
    k as f64 / 1024.0
}

pub(super) fn machine_info() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let ram_kib: u64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Machine {
        cpu,
        cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        ram_gib: ram_kib as f64 / (1024.0 * 1024.0),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_default(),
    }
}

/// Today's UTC date as `YYYY-MM-DD` (civil-from-days, no subprocess).
pub(super) fn today_utc() -> String {
    let secs = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Howard Hinnant's days-since-epoch to (year, month, day).
pub(super) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}

//! Time to OOM: a least-squares line through recent used memory, extended to the GPU's total.
//!
//! The window is chosen adaptively: the longest recent stretch over which a straight line still
//! explains the memory well (a leak that began 40 s ago is fitted over 40 s, not diluted by the
//! flat minutes before it). The uncertainty comes from the residuals: the slope's standard error,
//! and the time-to-OOM range for the slope at plus and minus two standard errors.

use crate::series::GpuSeries;
use serde::Serialize;

/// A straight line fitted to (t, used bytes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinearFit {
    /// Bytes per second.
    pub slope: f64,
    /// Standard error of the slope, from the residuals.
    pub slope_se: f64,
    /// The line's value at the last point's time.
    pub fitted_now: f64,
    /// Share of the variance the line explains, 0..1.
    pub r2: f64,
    /// Time covered by the points.
    pub span_s: f64,
    pub n: usize,
}

/// Ordinary least squares; `None` for fewer than 3 points or no spread in time.
pub fn fit_line(points: impl Iterator<Item = (f64, f64)>) -> Option<LinearFit> {
    // Shift by the first point to keep the sums well conditioned (t ~ 1e9 for Unix time).
    let mut origin: Option<(f64, f64)> = None;
    let (mut n, mut sx, mut sy, mut sxx, mut sxy, mut syy) = (0usize, 0.0, 0.0, 0.0, 0.0, 0.0);
    let mut t_first = 0.0;
    let mut t_last = 0.0;
    for (t, y) in points {
        let (t0, y0) = *origin.get_or_insert((t, y));
        let (x, y) = (t - t0, y - y0);
        if n == 0 {
            t_first = t;
        }
        t_last = t;
        n += 1;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
        syy += y * y;
    }
    if n < 3 {
        return None;
    }
    let nf = n as f64;
    let vxx = sxx - sx * sx / nf;
    let vxy = sxy - sx * sy / nf;
    let vyy = syy - sy * sy / nf;
    if vxx <= 0.0 {
        return None;
    }
    let slope = vxy / vxx;
    let ssr = (vyy - slope * vxy).max(0.0);
    let r2 = if vyy > 0.0 {
        (1.0 - ssr / vyy).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let slope_se = (ssr / (nf - 2.0).max(1.0) / vxx).sqrt();
    let (t0, y0) = origin.expect("n >= 3");
    let mean_x = sx / nf;
    let mean_y = sy / nf;
    let fitted_now = y0 + mean_y + slope * ((t_last - t0) - mean_x);
    Some(LinearFit {
        slope,
        slope_se,
        fitted_now,
        r2,
        span_s: t_last - t_first,
        n,
    })
}

/// Windows tried, shortest first (seconds back from now).
const WINDOWS_S: [f64; 10] = [
    20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0, 900.0,
];
/// A line must explain this share of the variance to count as a trend.
pub const TREND_R2: f64 = 0.9;

/// The fit over the longest recent window that is still one clean upward line: R² >= 0.9, slope
/// above two standard errors, and a slope that agrees (within two combined standard errors) with
/// the shorter windows' — a window that reaches back past the start of a climb bends the line
/// and lowers the slope, so it stops the search. Without such a line, the fit over the shortest
/// window with enough points.
pub fn trend(series: &GpuSeries) -> Option<LinearFit> {
    let now = series.now();
    let oldest = series.points().next()?.t;
    let mut best: Option<LinearFit> = None;
    let mut fallback: Option<LinearFit> = None;
    for w in WINDOWS_S {
        let fit = fit_line(series.since(now - w).map(|p| (p.t, p.used as f64)));
        let Some(fit) = fit else { continue };
        if fit.n < 8 {
            continue;
        }
        fallback.get_or_insert(fit);
        let clean = fit.r2 >= TREND_R2 && fit.slope > 2.0 * fit.slope_se && fit.slope > 0.0;
        let agrees = best.is_none_or(|b| {
            (fit.slope - b.slope).abs() <= 2.0 * (fit.slope_se.powi(2) + b.slope_se.powi(2)).sqrt()
        });
        if clean && agrees {
            best = Some(fit);
        } else if best.is_some() {
            break;
        }
        if now - w <= oldest {
            break;
        }
    }
    best.or(fallback)
}

/// When this GPU runs out of memory at the current trend, with a range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Forecast {
    pub gpu: u32,
    /// Seconds until used memory reaches total; null when memory is not climbing.
    pub time_to_oom_s: Option<f64>,
    /// Range for the slope at +/- two standard errors (high is null when the slower end is flat).
    pub low_s: Option<f64>,
    pub high_s: Option<f64>,
    pub slope_bytes_per_s: Option<f64>,
    pub r2: Option<f64>,
}

impl Forecast {
    pub fn none(gpu: u32) -> Forecast {
        Forecast {
            gpu,
            time_to_oom_s: None,
            low_s: None,
            high_s: None,
            slope_bytes_per_s: None,
            r2: None,
        }
    }
}

/// A forecast from a fit; only a significant climb gives a time: R² >= 0.6, slope above two
/// standard errors, 20 s of data, and growth over the fit of at least 0.5% of the GPU (a batch
/// breathing by a few tens of MiB is not a trend toward OOM).
pub fn forecast(gpu: u32, fit: Option<&LinearFit>, total: u64) -> Forecast {
    let Some(f) = fit else {
        return Forecast::none(gpu);
    };
    let significant = f.slope > 0.0
        && f.slope > 2.0 * f.slope_se
        && f.r2 >= 0.6
        && f.span_s >= 19.0
        && f.slope * f.span_s >= 0.005 * total as f64;
    if !significant {
        return Forecast {
            slope_bytes_per_s: Some(f.slope),
            r2: Some(f.r2),
            ..Forecast::none(gpu)
        };
    }
    let remaining = (total as f64 - f.fitted_now).max(0.0);
    let at = |slope: f64| (slope > 0.0).then(|| remaining / slope);
    Forecast {
        gpu,
        time_to_oom_s: at(f.slope),
        low_s: at(f.slope + 2.0 * f.slope_se),
        high_s: at(f.slope - 2.0 * f.slope_se),
        slope_bytes_per_s: Some(f.slope),
        r2: Some(f.r2),
    }
}

/// `4m 05s`, `1h 12m`, `38s`.
pub fn fmt_duration(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}h {:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m {:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_line_has_zero_error() {
        let f = fit_line((0..10).map(|i| (100.0 + i as f64, 5.0 + 2.0 * i as f64))).unwrap();
        assert!((f.slope - 2.0).abs() < 1e-9);
        assert!(f.slope_se < 1e-9);
        assert!((f.fitted_now - 23.0).abs() < 1e-9);
        assert!((f.r2 - 1.0).abs() < 1e-9);
    }

    #[test]
    fn noise_widens_the_range_and_flat_gives_no_time() {
        let noisy: Vec<(f64, f64)> = (0..60)
            .map(|i| {
                (
                    i as f64,
                    1e9 + 1e6 * i as f64 + if i % 2 == 0 { 3e6 } else { -3e6 },
                )
            })
            .collect();
        let f = fit_line(noisy.into_iter()).unwrap();
        let fc = forecast(0, Some(&f), 2_000_000_000);
        let (lo, mid, hi) = (
            fc.low_s.unwrap(),
            fc.time_to_oom_s.unwrap(),
            fc.high_s.unwrap(),
        );
        assert!(lo < mid && mid < hi, "{lo} {mid} {hi}");
        let flat = fit_line((0..60).map(|i| (i as f64, 1e9 + if i % 2 == 0 { 1e6 } else { -1e6 })))
            .unwrap();
        assert_eq!(forecast(0, Some(&flat), 2_000_000_000).time_to_oom_s, None);
    }
}

//! Time to OOM: a least-squares line through recent used memory, extended to the GPU's total.
//!
//! The window is chosen adaptively: the longest recent stretch over which a straight line still
//! explains the memory well (a leak that began 40 s ago is fitted over 40 s, not diluted by the
//! flat minutes before it). The uncertainty comes from the residuals: the slope's standard error
//! (widened for residuals that persist from one sample to the next), and the time-to-OOM range
//! for the slope at plus and minus two standard errors.

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

/// Running sums for a least-squares line; points may come in any order.
#[derive(Debug, Clone, Copy, Default)]
struct LineSums {
    /// The first point pushed: sums are kept relative to it so they stay well conditioned.
    origin: Option<(f64, f64)>,
    n: usize,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
    syy: f64,
    t_min: f64,
    t_max: f64,
}

impl LineSums {
    fn push(&mut self, t: f64, y: f64) {
        let (t0, y0) = *self.origin.get_or_insert((t, y));
        let (x, y) = (t - t0, y - y0);
        if self.n == 0 {
            (self.t_min, self.t_max) = (t, t);
        }
        self.t_min = self.t_min.min(t);
        self.t_max = self.t_max.max(t);
        self.n += 1;
        self.sx += x;
        self.sy += y;
        self.sxx += x * x;
        self.sxy += x * y;
        self.syy += y * y;
    }

    fn fit(&self) -> Option<LinearFit> {
        let (t0, y0) = self.origin?;
        if self.n < 3 {
            return None;
        }
        let nf = self.n as f64;
        let vxx = self.sxx - self.sx * self.sx / nf;
        let vxy = self.sxy - self.sx * self.sy / nf;
        let vyy = self.syy - self.sy * self.sy / nf;
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
        let (mean_x, mean_y) = (self.sx / nf, self.sy / nf);
        let fitted_now = y0 + mean_y + slope * ((self.t_max - t0) - mean_x);
        Some(LinearFit {
            slope,
            slope_se,
            fitted_now,
            r2,
            span_s: self.t_max - self.t_min,
            n: self.n,
        })
    }
}

/// Ordinary least squares; `None` for fewer than 3 points or no spread in time. `fitted_now` is
/// the line at the latest time.
pub fn fit_line(points: impl Iterator<Item = (f64, f64)>) -> Option<LinearFit> {
    let mut sums = LineSums::default();
    for (t, y) in points {
        sums.push(t, y);
    }
    sums.fit()
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
    // One pass from the newest point back: the fit of each window is taken as the walk crosses
    // its start, so a tick costs one walk over the history, not one per window.
    let now = series.now();
    let mut sums = LineSums::default();
    let mut fits = Vec::with_capacity(WINDOWS_S.len());
    for p in series.points().rev() {
        while fits.len() < WINDOWS_S.len() && p.t < now - WINDOWS_S[fits.len()] {
            fits.push(sums.fit());
        }
        if fits.len() == WINDOWS_S.len() {
            break;
        }
        sums.push(p.t, p.used as f64);
    }
    if fits.len() < WINDOWS_S.len() {
        // The history ends inside this window: it is the longest one there is.
        fits.push(sums.fit());
    }
    let mut best: Option<LinearFit> = None;
    let mut fallback: Option<LinearFit> = None;
    for fit in fits.into_iter().flatten().filter(|f| f.n >= 8) {
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
    }
    best.or(fallback)
        .map(|f| widen_for_autocorrelation(series, f))
        .map(|f| refine_hinge(series, f))
        .map(|f| gate_on_past_range(series, f))
}

/// How far back the range a series already visited is looked up (seconds).
const PAST_RANGE_S: f64 = 600.0;

/// A window whose start reaches back before a climb began mixes the flat part into the line and
/// lowers the slope. Within the window, fit a hinge (flat, then a straight climb from a break
/// point τ) and, when it explains the points clearly better than the single line (an F test
/// on the one extra parameter), keep the climb's slope and level, over the span since τ.
fn refine_hinge(series: &GpuSeries, fit: LinearFit) -> LinearFit {
    let now = series.now();
    let start = now - fit.span_s - 1e-9;
    let pts: Vec<(f64, f64)> = series.since(start).map(|p| (p.t, p.used as f64)).collect();
    if pts.len() < 16 || fit.slope <= 0.0 {
        return fit;
    }
    let sse = |f: &dyn Fn(f64) -> f64| pts.iter().map(|(t, y)| (y - f(*t)).powi(2)).sum::<f64>();
    let line_sse = sse(&|t| fit.fitted_now - fit.slope * (now - t));
    let plain_se = fit_line(pts.iter().copied())
        .map(|f| f.slope_se)
        .unwrap_or(0.0);
    let widen = if plain_se > 0.0 {
        fit.slope_se / plain_se
    } else {
        1.0
    };
    let mut best: Option<(f64, LinearFit)> = None;
    // break points over the first 70 % of the window, 24 steps
    for k in 1..=24 {
        let tau = start + fit.span_s * 0.7 * k as f64 / 24.0;
        // y = a + b·max(0, t − τ): least squares on the regressor x = max(0, t − τ)
        let mut sums = LineSums::default();
        for (t, y) in &pts {
            sums.push((t - tau).max(0.0), *y);
        }
        let Some(h) = sums.fit() else { continue };
        let climbing = pts.iter().filter(|(t, _)| *t >= tau).count();
        if climbing < 8 || h.slope <= 0.0 {
            continue;
        }
        let level_now = h.fitted_now;
        let h_sse = sse(&|t| level_now - h.slope * ((now - tau) - (t - tau).max(0.0)));
        if best.as_ref().is_none_or(|(b, _)| h_sse < *b) {
            let lf = LinearFit {
                slope: h.slope,
                slope_se: h.slope_se * widen,
                fitted_now: level_now,
                r2: h.r2,
                span_s: now - tau,
                n: climbing,
            };
            best = Some((h_sse, lf));
        }
    }
    match best {
        // one more parameter than the line: an F statistic of 10 (p ≈ 0.002 at these sizes)
        Some((h_sse, h))
            if (line_sse - h_sse) / (h_sse / (pts.len() - 3) as f64).max(1e-9) > 10.0 =>
        {
            h
        }
        _ => fit,
    }
}

/// Noise wanders: a stretch of it can look like a clean climb. A climb toward OOM leaves the
/// range the series already visited; so when at least as long a history precedes the fit, the
/// fitted level must exceed the highest point of that history (up to 10 minutes back) by two
/// residual standard deviations, or the slope counts as not significant (infinite error).
fn gate_on_past_range(series: &GpuSeries, mut fit: LinearFit) -> LinearFit {
    let now = series.now();
    let cut = now - fit.span_s - 1e-9;
    let mut prior_max = f64::NEG_INFINITY;
    let mut oldest = cut;
    for p in series.since(now - PAST_RANGE_S).take_while(|p| p.t < cut) {
        prior_max = prior_max.max(p.used as f64);
        oldest = oldest.min(p.t);
    }
    if cut - oldest < fit.span_s.max(30.0) {
        return fit;
    }
    let (mut ss, mut n) = (0.0, 0usize);
    for p in series.since(cut) {
        ss += (p.used as f64 - (fit.fitted_now - fit.slope * (now - p.t))).powi(2);
        n += 1;
    }
    let sd = (ss / (n.max(3) - 2) as f64).sqrt();
    if fit.fitted_now < prior_max + 2.0 * sd {
        fit.slope_se = f64::INFINITY;
    }
    fit
}

/// Residuals of memory around a line are not independent (allocator segments and load waves
/// last several samples), which makes the plain standard error too small. Scale it by
/// sqrt((1 + r) / (1 - r)), r the lag-1 autocorrelation of the residuals over the fit's window
/// (the usual effective-sample-size correction for AR(1) noise).
fn widen_for_autocorrelation(series: &GpuSeries, mut fit: LinearFit) -> LinearFit {
    let now = series.now();
    let residual =
        |p: &crate::series::Point| p.used as f64 - (fit.fitted_now - fit.slope * (now - p.t));
    let (mut prev, mut num, mut den) = (None::<f64>, 0.0, 0.0);
    for p in series.since(now - fit.span_s - 1e-9) {
        let r = residual(p);
        if let Some(q) = prev {
            num += q * r;
        }
        den += r * r;
        prev = Some(r);
    }
    if den > 0.0 {
        let rho = (num / den).clamp(0.0, 0.9);
        fit.slope_se *= ((1.0 + rho) / (1.0 - rho)).sqrt();
    }
    fit
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

/// How long a climb must have lasted before it gets a time to OOM: as long as a leak must
/// (the leak detector's `leak_min_span_s`, 30 s by default, less half a 1 Hz sample; the
/// monitor passes its configured one through [`forecast_after`]). A burst of
/// requests climbs too (KV and activations grow with the tokens generated) and ends with the
/// requests; the bursts of a loaded server last seconds to tens of seconds, a leak keeps going.
pub const FORECAST_MIN_SPAN_S: f64 = 29.5;

/// A forecast from a fit; only a significant climb gives a time: R² >= 0.6, slope above two
/// standard errors, [`FORECAST_MIN_SPAN_S`] of climbing, and growth over the fit of at least
/// 0.5% of the GPU (a batch breathing by a few tens of MiB is not a trend toward OOM).
pub fn forecast(gpu: u32, fit: Option<&LinearFit>, total: u64) -> Forecast {
    forecast_after(gpu, fit, total, FORECAST_MIN_SPAN_S)
}

/// [`forecast`] with the climb's minimum span given (`leak_min_span_s` − 0.5 s).
pub fn forecast_after(gpu: u32, fit: Option<&LinearFit>, total: u64, min_span_s: f64) -> Forecast {
    let Some(f) = fit else {
        return Forecast::none(gpu);
    };
    let significant = f.slope > 0.0
        && f.slope > 2.0 * f.slope_se
        && f.r2 >= 0.6
        && f.span_s >= min_span_s
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

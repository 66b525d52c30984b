//! An SVG chart of allocated and reserved memory over the trace: one panel per device, OOM
//! entries marked in red. Long traces are reduced to the min and max of each pixel column, so
//! peaks survive and the file stays small.

use super::timeline::{DeviceTimeline, TimelinePoint};
use std::fmt::Write;
use vramfit_model::units::fmt_bytes;

const WIDTH: f64 = 960.0;
const PANEL: f64 = 260.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 46.0;
const BOTTOM: f64 = 44.0;
const ALLOCATED: &str = "#1f77b4";
const RESERVED: &str = "#ff7f0e";

/// Renders the timelines; `title` is escaped. With no timeline, a panel that says so.
pub fn render(timelines: &[DeviceTimeline], title: &str) -> String {
    let panels = timelines.len().max(1) as f64;
    let height = panels * PANEL + 10.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    s.push_str(r#"<rect width="100%" height="100%" fill="white"/>"#);
    if timelines.is_empty() {
        let _ = write!(
            s,
            r#"<text x="{LEFT}" y="{TOP}">{}: no trace entries recorded (record with torch.cuda.memory._record_memory_history())</text>"#,
            escape(title)
        );
    }
    for (i, tl) in timelines.iter().enumerate() {
        panel(&mut s, tl, title, i as f64 * PANEL);
    }
    s.push_str("</svg>\n");
    s
}

fn panel(s: &mut String, tl: &DeviceTimeline, title: &str, y0: f64) {
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = PANEL - TOP - BOTTOM;
    let (bottom, top) = (y0 + TOP + plot_h, y0 + TOP);
    let by_time = tl.points.iter().all(|p| p.time_us.is_some());
    let xval = |p: &TimelinePoint| -> f64 {
        if by_time {
            p.time_us.unwrap_or(0) as f64
        } else {
            p.index as f64
        }
    };
    let (x_min, x_max) = match (tl.points.first(), tl.points.last()) {
        (Some(a), Some(b)) => (xval(a), xval(b)),
        _ => (0.0, 0.0),
    };
    let x_span = (x_max - x_min).max(1.0);
    let y_max = (tl.peak_reserved.max(tl.peak_allocated) as f64 * 1.05).max(1.0);
    let px = |x: f64| LEFT + (x - x_min) / x_span * plot_w;
    let py = |v: u64| bottom - v as f64 / y_max * plot_h;

    let _ = write!(
        s,
        r#"<text x="{LEFT}" y="{}" font-size="14" font-weight="bold">{} — device {}: peak allocated {}, peak reserved {}</text>"#,
        y0 + 20.0,
        escape(title),
        tl.device,
        fmt_bytes(tl.peak_allocated),
        fmt_bytes(tl.peak_reserved)
    );
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>"##
    );
    for k in 0..=4 {
        let v = (y_max / 1.05) * k as f64 / 4.0;
        let y = py(v as u64);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0,
            fmt_bytes(v as u64)
        );
    }
    let x_label = if by_time {
        format!("time: {:.3} s recorded", x_span / 1e6)
    } else {
        format!("trace entries: {}", tl.points.len())
    };
    let _ = write!(
        s,
        r#"<text x="{LEFT}" y="{:.1}">{x_label}</text>"#,
        bottom + 18.0
    );
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" fill="{ALLOCATED}">— allocated</text><text x="{:.1}" y="{:.1}" fill="{RESERVED}">— reserved</text>"#,
        LEFT + plot_w - 190.0,
        bottom + 18.0,
        LEFT + plot_w - 90.0,
        bottom + 18.0
    );
    for (series, color) in [(Series::Reserved, RESERVED), (Series::Allocated, ALLOCATED)] {
        let pts = reduce(&tl.points, series, plot_w as usize, &xval, x_min, x_span);
        let mut path = String::new();
        for (x, v) in pts {
            let _ = write!(path, "{:.1},{:.1} ", LEFT + x, py(v));
        }
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/>"#,
            path.trim_end()
        );
    }
    for &i in &tl.ooms {
        let x = px(xval(&tl.points[i]));
        // the label goes left of the line when the OOM is near the right edge (it usually ends the trace)
        let (label_x, anchor) = if x > LEFT + plot_w - 40.0 {
            (x - 3.0, "end")
        } else {
            (x + 3.0, "start")
        };
        let _ = write!(
            s,
            r#"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom}" stroke="red" stroke-dasharray="4 3"/><text x="{label_x:.1}" y="{:.1}" fill="red" text-anchor="{anchor}">OOM</text>"#,
            top + 12.0
        );
    }
}

#[derive(Clone, Copy)]
enum Series {
    Allocated,
    Reserved,
}

/// Points in pixel-x order: per pixel column, its values' min and max in the order they came.
fn reduce(
    points: &[TimelinePoint],
    series: Series,
    columns: usize,
    xval: &dyn Fn(&TimelinePoint) -> f64,
    x_min: f64,
    x_span: f64,
) -> Vec<(f64, u64)> {
    let value = |p: &TimelinePoint| match series {
        Series::Allocated => p.allocated,
        Series::Reserved => p.reserved,
    };
    let width = columns.max(1) as f64;
    let mut out: Vec<(f64, u64)> = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let col = ((xval(&points[i]) - x_min) / x_span * width).floor();
        let start = i;
        while i < points.len() && ((xval(&points[i]) - x_min) / x_span * width).floor() == col {
            i += 1;
        }
        let bucket = &points[start..i];
        let x = col.min(width);
        let (mut lo, mut hi) = (0, 0);
        for (k, p) in bucket.iter().enumerate() {
            if value(p) < value(&bucket[lo]) {
                lo = k;
            }
            if value(p) > value(&bucket[hi]) {
                hi = k;
            }
        }
        let mut keep = vec![0, lo, hi, bucket.len() - 1];
        keep.sort_unstable();
        keep.dedup();
        out.extend(keep.into_iter().map(|k| (x, value(&bucket[k]))));
    }
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

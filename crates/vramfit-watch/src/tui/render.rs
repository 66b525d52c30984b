//! Draws a [`DashboardView`] into a ratatui frame. Pure: the same view gives the same cells,
//! which is what the snapshot tests pin.

use super::view::DashboardView;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Block, Chart, Dataset, Gauge, GraphType, Paragraph, Row, Table, Wrap,
};
use ratatui::Frame;

/// Draws one frame.
pub fn draw(frame: &mut Frame, view: &DashboardView) {
    let area = frame.area();
    let gpu_rows = view.gpus.len().clamp(1, 8) as u16;
    let [title, gpus, chart, bottom, alerts, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(gpu_rows + 2),
        Constraint::Min(8),
        Constraint::Length(8),
        Constraint::Length(10),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(
        Paragraph::new(Line::from(Span::styled(
            view.title.clone(),
            Style::new().add_modifier(Modifier::BOLD),
        ))),
        title,
    );
    draw_gpus(frame, view, gpus);
    draw_chart(frame, view, chart);
    let [procs, engine] =
        Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(bottom);
    draw_processes(frame, view, procs);
    draw_engine(frame, view, engine);
    draw_alerts(frame, view, alerts);
    frame.render_widget(
        Paragraph::new(view.status.clone()).style(Style::new().fg(Color::DarkGray)),
        status,
    );
}

fn usage_color(ratio: f64) -> Color {
    if ratio >= 0.97 {
        Color::Red
    } else if ratio >= 0.9 {
        Color::Yellow
    } else {
        Color::Green
    }
}

fn draw_gpus(frame: &mut Frame, view: &DashboardView, area: Rect) {
    let block = Block::bordered().title(" GPUs ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let rows = Layout::vertical(vec![Constraint::Length(1); view.gpus.len().max(1)]).split(inner);
    for (i, (g, row)) in view.gpus.iter().zip(rows.iter()).enumerate() {
        let [label, bar, info] = Layout::horizontal([
            Constraint::Length(32),
            Constraint::Min(10),
            Constraint::Length(52),
        ])
        .areas(*row);
        let marker = if i == view.selected { ">" } else { " " };
        frame.render_widget(Paragraph::new(format!("{marker}{}", g.label)), label);
        frame.render_widget(
            Gauge::default()
                .ratio(g.ratio)
                .label(format!("{:.1}%", g.ratio * 100.0))
                .gauge_style(Style::new().fg(usage_color(g.ratio)).bg(Color::Black)),
            bar,
        );
        let kv = g.kv.as_deref().unwrap_or("");
        frame.render_widget(
            Paragraph::new(format!(" {}  {kv:<7} {}", g.usage, g.oom)),
            info,
        );
    }
}

fn draw_chart(frame: &mut Frame, view: &DashboardView, area: Rect) {
    let c = &view.chart;
    let total = [(c.x_bounds[0], c.total_gib), (c.x_bounds[1], c.total_gib)];
    let mut datasets = vec![
        Dataset::default()
            .name("total")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::new().fg(Color::Red))
            .data(&total),
        Dataset::default()
            .name("used")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::new().fg(Color::Cyan))
            .data(&c.used),
    ];
    if !c.forecast.is_empty() {
        datasets.push(
            Dataset::default()
                .name("forecast")
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::new().fg(Color::Yellow))
                .data(&c.forecast),
        );
    }
    let top = (c.total_gib * 1.05).max(1.0);
    let [x0, x1] = c.x_bounds;
    let selected = view.gpus.get(view.selected).map(|g| g.gpu).unwrap_or(0);
    let chart = Chart::new(datasets)
        .block(Block::bordered().title(format!(
            " GPU {selected} used memory (GiB), forecast ahead "
        )))
        .x_axis(Axis::default().bounds([x0, x1]).labels([
            format!("{x0:.0}s"),
            format!("{:.0}s", (x0 + x1) / 2.0),
            format!("{x1:.0}s"),
        ]))
        .y_axis(Axis::default().bounds([0.0, top]).labels([
            "0".to_string(),
            format!("{:.0}", top / 2.0),
            format!("{top:.0}"),
        ]));
    frame.render_widget(chart, area);
}

fn draw_processes(frame: &mut Frame, view: &DashboardView, area: Rect) {
    let rows = view
        .processes
        .iter()
        .map(|p| Row::new(vec![p.pid.to_string(), p.name.clone(), p.used.clone()]));
    let table = Table::new(
        rows,
        [
            Constraint::Length(8),
            Constraint::Min(16),
            Constraint::Length(12),
        ],
    )
    .header(
        Row::new(vec!["PID", "PROCESS", "MEMORY"]).style(Style::new().add_modifier(Modifier::BOLD)),
    )
    .block(Block::bordered().title(" Processes "));
    frame.render_widget(table, area);
}

fn draw_engine(frame: &mut Frame, view: &DashboardView, area: Rect) {
    let block = Block::bordered().title(" Engine ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let e = &view.engine;
    let Some(kv) = e.kv_ratio else {
        let text = if e.running.is_some() {
            "KV usage not reported"
        } else {
            "no engine metrics (--engine URL)"
        };
        frame.render_widget(Paragraph::new(text), inner);
        return;
    };
    let [gauge, counts] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(inner);
    frame.render_widget(
        Gauge::default()
            .ratio(kv.clamp(0.0, 1.0))
            .label(format!("KV cache {:.0}%", kv * 100.0))
            .gauge_style(Style::new().fg(Color::Magenta).bg(Color::Black)),
        gauge,
    );
    let show = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_else(|| "-".into());
    frame.render_widget(
        Paragraph::new(format!(
            "running {}   waiting {}",
            show(e.running),
            show(e.waiting)
        )),
        counts,
    );
}

fn draw_alerts(frame: &mut Frame, view: &DashboardView, area: Rect) {
    let block = Block::bordered().title(" Alerts (newest first) ");
    let lines: Vec<Line> = if view.alerts.is_empty() {
        vec![Line::from("no alerts")]
    } else {
        view.alerts.iter().map(|a| Line::from(a.as_str())).collect()
    };
    // Wrapped, so the fix at the end of each message stays readable.
    frame.render_widget(
        Paragraph::new(lines).block(block).wrap(Wrap { trim: true }),
        area,
    );
}

//! Line charts as SVG, drawn on the server: a y axis from zero to a round maximum with its unit,
//! an x axis of UTC times, one line per series (broken where a step has no data), a legend.
//! No script and no external library: the page stays a plain document.

use chrono::NaiveDateTime;
use maud::{html, Markup};

const WIDTH: f64 = 560.0;
const HEIGHT: f64 = 200.0;
const LEFT: f64 = 58.0;
const RIGHT: f64 = 22.0;
const TOP: f64 = 24.0;
const BOTTOM: f64 = 26.0;

/// One line of a chart: its name, colour and a value per step (`None`: no data).
pub struct Line<'a> {
    pub name: &'a str,
    pub colour: &'a str,
    pub values: Vec<Option<f64>>,
}

/// What a chart shows.
pub struct Chart<'a> {
    /// What the chart is, for tests and styles (`throughput`, `processing`…).
    pub id: &'a str,
    pub title: &'a str,
    /// The unit of the y axis (`msg/s`, `ms`).
    pub unit: &'a str,
    /// When the first step starts, and how long each step is.
    pub start: NaiveDateTime,
    pub step: chrono::Duration,
    pub lines: Vec<Line<'a>>,
}

/// The smallest of 1, 2, 5 × 10ⁿ at or above `value` (at least `floor`).
pub fn round_up(value: f64, floor: f64) -> f64 {
    let value = value.max(floor);
    let magnitude = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|v| *v >= value - value * 1e-9)
        .unwrap_or(10.0 * magnitude)
}

/// A number for an axis label: no more digits than it needs.
pub fn label(value: f64) -> String {
    if value == 0.0 {
        "0".into()
    } else if value >= 100.0 || value.fract() == 0.0 {
        format!("{value:.0}")
    } else if value >= 1.0 {
        format!("{value:.1}")
    } else {
        let text = format!("{value:.3}");
        text.trim_end_matches('0').to_string()
    }
}

/// Draws `chart`.
pub fn draw(chart: &Chart) -> Markup {
    let steps = chart
        .lines
        .iter()
        .map(|l| l.values.len())
        .max()
        .unwrap_or(0);
    let observed = chart
        .lines
        .iter()
        .flat_map(|l| l.values.iter().flatten().copied())
        .fold(0.0f64, f64::max);
    let floor = if chart.unit == "messages" { 10.0 } else { 1.0 };
    let max = round_up(observed, floor);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |i: usize| LEFT + plot_w * (i as f64 + 0.5) / steps.max(1) as f64;
    let y = |v: f64| TOP + plot_h * (1.0 - (v / max).clamp(0.0, 1.0));
    let total = chart.step * i32::try_from(steps).unwrap_or(i32::MAX);
    let ticks: Vec<(f64, String)> = (0..=4)
        .map(|k| {
            let at = chart.start + total * k / 4;
            (
                LEFT + plot_w * f64::from(k) / 4.0,
                at.format("%H:%M").to_string(),
            )
        })
        .collect();
    html! {
        figure.chart {
            figcaption { (chart.title) }
            svg.chart data-chart=(chart.id) data-max=(observed) width=(WIDTH) height=(HEIGHT)
                viewBox={"0 0 " (WIDTH) " " (HEIGHT)} role="img"
                aria-label={(chart.title) ", in " (chart.unit) ", up to " (label(observed))} {
                // The y axis: gridlines at 0, half and the maximum, with the unit.
                @for fraction in [0.0, 0.5, 1.0] {
                    @let v = max * fraction;
                    line.grid x1=(LEFT) x2=(WIDTH - RIGHT) y1=(y(v)) y2=(y(v)) {}
                    text.tick x=(LEFT - 6.0) y=(y(v) + 4.0) text-anchor="end" { (label(v)) }
                }
                text.unit x="4" y="12" { (chart.unit) }
                // The x axis: five UTC times.
                line.axis x1=(LEFT) x2=(WIDTH - RIGHT) y1=(TOP + plot_h) y2=(TOP + plot_h) {}
                @for (k, (tx, text)) in ticks.iter().enumerate() {
                    line.axis x1=(tx) x2=(tx) y1=(TOP + plot_h) y2=(TOP + plot_h + 4.0) {}
                    // The last time ends at its tick, inside the picture.
                    text.tick x=(tx) y=(HEIGHT - 8.0) text-anchor=(if k == 4 { "end" } else { "middle" }) { (text) }
                }
                text.unit x="4" y=(HEIGHT - 8.0) { "UTC" }
                @for line in &chart.lines {
                    @for run in runs(&line.values) {
                        @if run.len() == 1 {
                            circle data-series=(line.name) cx=(x(run[0].0)) cy=(y(run[0].1)) r="2" fill=(line.colour) {}
                        } @else {
                            polyline data-series=(line.name) fill="none" stroke=(line.colour) stroke-width="1.6"
                                points=(run.iter().map(|&(i, v)| format!("{:.1},{:.1}", x(i), y(v))).collect::<Vec<_>>().join(" ")) {}
                        }
                    }
                }
            }
            p.legend {
                @for line in &chart.lines {
                    span {
                        svg width="18" height="6" { rect width="18" height="4" y="1" fill=(line.colour) {} }
                        " " (line.name)
                    }
                }
            }
        }
    }
}

/// The stretches of consecutive steps that have a value, as (step, value).
fn runs(values: &[Option<f64>]) -> Vec<Vec<(usize, f64)>> {
    let mut out: Vec<Vec<(usize, f64)>> = Vec::new();
    let mut current: Vec<(usize, f64)> = Vec::new();
    for (i, v) in values.iter().enumerate() {
        match v {
            Some(v) => current.push((i, *v)),
            None if !current.is_empty() => out.push(std::mem::take(&mut current)),
            None => {}
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(round_up(0.0, 1.0), 1.0);
        assert_eq!(round_up(3.2, 1.0), 5.0);
        assert_eq!(round_up(17.0, 1.0), 20.0);
        assert_eq!(round_up(50.0, 1.0), 50.0);
        assert_eq!(round_up(501.0, 1.0), 1000.0);
        assert_eq!(label(0.5), "0.5");
        assert_eq!(label(2.5), "2.5");
        assert_eq!(label(1000.0), "1000");
    }

    #[test]
    fn gaps_break_a_line() {
        let values = [Some(1.0), Some(2.0), None, None, Some(3.0)];
        let runs = runs(&values);
        assert_eq!(runs, vec![vec![(0, 1.0), (1, 2.0)], vec![(4, 3.0)]]);
    }

    #[test]
    fn a_chart_has_axes_units_times_and_its_lines() {
        let start = chrono::DateTime::from_timestamp(1_800_000_000, 0)
            .expect("a time")
            .naive_utc();
        let svg = draw(&Chart {
            id: "throughput",
            title: "Throughput",
            unit: "msg/s",
            start,
            step: chrono::Duration::seconds(15),
            lines: vec![Line {
                name: "handled",
                colour: "#2e6fb7",
                values: vec![Some(1.0), Some(3.2), None, Some(2.0)],
            }],
        })
        .into_string();
        assert!(svg.contains("data-chart=\"throughput\""), "{svg}");
        assert!(svg.contains(">msg/s<") && svg.contains(">UTC<"), "{svg}");
        assert!(svg.contains(">5<"), "the axis tops at 5: {svg}");
        assert!(svg.contains(">08:00<"), "the first time: {svg}");
        assert!(svg.contains("polyline data-series=\"handled\""), "{svg}");
        assert!(svg.contains("circle data-series=\"handled\""), "{svg}");
    }
}

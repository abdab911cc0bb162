//! `docs/benchmarks.svg`: one group of bars per workload, one bar per
//! library, each bar the library's median ÷ the row leader's (the fastest
//! ECS = 1.0; `plain_vec` may dip below), on a log axis so 2× slower looks
//! the same distance from 1.0 in every workload.

use std::path::Path;

use mosaic_bench_suite::registry::{kind, Kind};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::env_info::Env;
use crate::measure::{fmt_time, Config, Results};

const WIDTH: u32 = 1400;
const HEIGHT: u32 = 720;
const LEGEND_WIDTH: u32 = 150;

/// Tableau 10, mosaic in red; its tuned variants in lighter reds.
fn color(library: &str) -> RGBColor {
    match library {
        "mosaic" => RGBColor(214, 39, 40),
        "mosaic_for_each" => RGBColor(255, 152, 150),
        "mosaic_sparse" => RGBColor(247, 196, 165),
        "mosaic_query" => RGBColor(240, 170, 190),
        "bevy" => RGBColor(31, 119, 180),
        "hecs" => RGBColor(255, 127, 14),
        "legion" => RGBColor(44, 160, 44),
        "shipyard" => RGBColor(148, 103, 189),
        "specs" => RGBColor(140, 86, 75),
        "flecs" => RGBColor(23, 190, 207),
        "plain_vec" => RGBColor(160, 160, 160),
        _ => RGBColor(188, 189, 34),
    }
}

pub fn draw(
    path: &Path,
    results: &Results,
    env: &Env,
    config: &Config,
) -> Result<(), Box<dyn std::error::Error>> {
    let libraries = results.libraries();
    let workloads: Vec<&str> = results
        .workloads
        .iter()
        .copied()
        .filter(|w| results.leader(w).is_some())
        .collect();
    // bars[w] = (library, median ÷ leader, median ns)
    let bars: Vec<Vec<(&str, f64)>> = workloads
        .iter()
        .map(|w| {
            let leader = results.leader(w).unwrap().stats.median;
            libraries
                .iter()
                .filter_map(|lib| results.get(w, lib).map(|s| (*lib, s.median / leader)))
                .collect()
        })
        .collect();
    let all = bars.iter().flatten().map(|b| b.1);
    let lo = all.clone().fold(1.0f64, f64::min);
    let hi = all.fold(1.0f64, f64::max);
    let y_min = (lo * 0.8).min(0.5);
    let y_max = hi * 2.2;

    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let (plot_area, legend_area) = root.split_horizontally(WIDTH - LEGEND_WIDTH);

    let subtitle = format!(
        "{}; {} mode; {}. Bar = median time ÷ the fastest ECS of the workload (1.0 = leader), \
         log scale; lower is better; no bar = no implementation.",
        env.cpu_summary, config.mode, env.date
    );
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(
            "mosaic and its peers on the ecs_bench_suite workloads",
            ("sans-serif", 24),
        )
        .margin(14)
        .x_label_area_size(84)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..workloads.len() as f64, (y_min..y_max).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("time ÷ row leader (log scale)")
        .y_label_formatter(&|v| {
            if *v < 0.95 {
                format!("{v:.1}×")
            } else {
                format!("{v:.0}×")
            }
        })
        .axis_desc_style(("sans-serif", 15))
        .label_style(("sans-serif", 13))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()?;

    // The leader line.
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(0.0, 1.0), (workloads.len() as f64, 1.0)],
        BLACK.stroke_width(1),
    )))?;

    let group = 0.84;
    let label_font = ("sans-serif", 11)
        .into_font()
        .transform(FontTransform::Rotate270);
    for (w, row) in bars.iter().enumerate() {
        let width = group / row.len() as f64;
        let start = w as f64 + (1.0 - group) / 2.0;
        for (i, &(lib, value)) in row.iter().enumerate() {
            let x0 = start + i as f64 * width;
            let x1 = x0 + width * 0.9;
            let fill = color(lib);
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x0, y_min), (x1, value)],
                fill.filled(),
            )))?;
            if kind(lib) == Kind::Mosaic {
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(x0, y_min), (x1, value)],
                    BLACK.stroke_width(1),
                )))?;
            }
            // The ratio, written upwards just above the bar.
            let (px, py) = chart.backend_coord(&((x0 + x1) / 2.0, value));
            let text = if value >= 10.0 {
                format!("{value:.0}")
            } else {
                format!("{value:.1}")
            };
            root.draw(&Text::new(
                text,
                (px - 6, py - 4),
                label_font.clone().color(&RGBColor(60, 60, 60)),
            ))?;
        }
    }

    // Workload names (and the leader's time) under each group.
    let name_style = TextStyle::from(("sans-serif", 14).into_font())
        .pos(Pos::new(HPos::Center, VPos::Top))
        .color(&BLACK);
    let note_style = TextStyle::from(("sans-serif", 11).into_font())
        .pos(Pos::new(HPos::Center, VPos::Top))
        .color(&RGBColor(90, 90, 90));
    for (w, workload) in workloads.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(w as f64 + 0.5, y_min));
        root.draw(&Text::new(
            workload.to_string(),
            (px, py + 8),
            name_style.clone(),
        ))?;
        let leader = results.leader(workload).unwrap();
        root.draw(&Text::new(
            format!("1.0 = {} {}", leader.library, fmt_time(leader.stats.median)),
            (px, py + 27),
            note_style.clone(),
        ))?;
    }

    // Log axes label only the powers of ten: add 2× and 5× steps.
    let tick_style = TextStyle::from(("sans-serif", 13).into_font())
        .pos(Pos::new(HPos::Right, VPos::Center))
        .color(&BLACK);
    let mut decade = 10f64.powf(y_min.log10().floor());
    while decade < y_max {
        for step in [2.0, 5.0] {
            let v = decade * step;
            if v > y_min && v < y_max {
                let (px, py) = chart.backend_coord(&(0.0, v));
                let text = if v < 0.95 {
                    format!("{v:.1}×")
                } else {
                    format!("{v:.0}×")
                };
                root.draw(&Text::new(text, (px - 6, py), tick_style.clone()))?;
            }
        }
        decade *= 10.0;
    }

    // How to read it, along the bottom.
    root.draw(&Text::new(
        subtitle,
        ((WIDTH - LEGEND_WIDTH) as i32 / 2, HEIGHT as i32 - 22),
        TextStyle::from(("sans-serif", 13).into_font())
            .pos(Pos::new(HPos::Center, VPos::Top))
            .color(&RGBColor(70, 70, 70)),
    ))?;

    // Legend, right of the plot.
    let legend_font = ("sans-serif", 15).into_font();
    for (i, lib) in libraries.iter().enumerate() {
        let y = 110 + i as i32 * 28;
        legend_area.draw(&Rectangle::new([(8, y), (26, y + 16)], color(lib).filled()))?;
        if kind(lib) == Kind::Mosaic {
            legend_area.draw(&Rectangle::new(
                [(8, y), (26, y + 16)],
                BLACK.stroke_width(1),
            ))?;
        }
        legend_area.draw(&Text::new(lib.to_string(), (34, y), legend_font.clone()))?;
    }
    root.present()?;
    Ok(())
}

//! The overview's pictures, drawn on the server as inline SVG: no script, nothing to load, sharp at
//! any size, coloured by the page's stylesheet (so the dark theme applies), and each bar a link to
//! the messages it counts. Every name is escaped; numbers are the only thing computed here.
//!
//! A chart is a labelled group (`role="group"`), not an image: an image's content is presentational
//! to assistive technology, so links inside one are controls nested where nobody can reach them
//! (axe-core's `nested-interactive`). Each link is named by what its bar says, so a keyboard or a
//! screen reader moves through the bars as through a list of links: a column, which shows no text,
//! by its period and count (`2026-10: 3`), a row by the text it shows (`Ann Example`, `3`).

use html_escape::{encode_double_quoted_attribute as attr, encode_text as text};

/// One bar: what it counts, how many, and where its messages are listed.
pub(crate) struct Bar {
    pub label: String,
    pub value: u64,
    /// Shown instead of the bare number (`3 files, 2.1 MB`).
    pub caption: Option<String>,
    pub link: Option<String>,
}

const WIDTH: f64 = 960.0;

/// Vertical bars along a time axis (messages per month or year), with a label every few bars so
/// they never overlap, and the largest value on the axis.
pub(crate) fn columns(bars: &[Bar], title: &str) -> String {
    if bars.is_empty() {
        return String::new();
    }
    let (height, top, bottom, left) = (180.0, 16.0, 28.0, 8.0);
    let plot = height - top - bottom;
    let max = bars.iter().map(|b| b.value).max().unwrap_or(0).max(1) as f64;
    let step = (WIDTH - 2.0 * left) / bars.len() as f64;
    let gap = if step > 4.0 { 1.0 } else { 0.0 };
    // About one label per 70 px.
    let every = ((70.0 / step).ceil() as usize).max(1);
    let mut out = format!(
        r#"<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="group" aria-label="{}" xmlns="http://www.w3.org/2000/svg">"#,
        attr(title)
    );
    out.push_str(&format!(r#"<text class="axis" x="{left}" y="11">{}</text>"#, max as u64));
    for (i, b) in bars.iter().enumerate() {
        let x = left + i as f64 * step;
        let h = (b.value as f64 / max * plot).max(if b.value > 0 { 1.0 } else { 0.0 });
        let y = top + plot - h;
        let tip = format!("{}: {}", b.label, b.caption.clone().unwrap_or_else(|| b.value.to_string()));
        let rect = format!(
            r#"<rect class="bar" x="{x:.2}" y="{y:.2}" width="{:.2}" height="{h:.2}"><title>{}</title></rect>"#,
            (step - gap).max(0.5),
            text(&tip)
        );
        match &b.link {
            Some(href) if b.value > 0 => {
                out.push_str(&format!(r#"<a href="{}" aria-label="{}">{rect}</a>"#, attr(href), attr(&tip)))
            }
            _ => out.push_str(&rect),
        }
        if i % every == 0 {
            out.push_str(&format!(
                r#"<text class="axis" x="{:.2}" y="{:.2}">{}</text>"#,
                x,
                height - 10.0,
                text(&b.label)
            ));
        }
    }
    out.push_str("</svg>");
    out
}

/// Horizontal bars, one per row, the label and the number beside each (top senders, lists, types).
pub(crate) fn rows(bars: &[Bar], title: &str) -> String {
    if bars.is_empty() {
        return String::new();
    }
    let (row, label_w, num_w) = (22.0, 330.0, 150.0);
    let height = row * bars.len() as f64 + 4.0;
    let max = bars.iter().map(|b| b.value).max().unwrap_or(0).max(1) as f64;
    let span = WIDTH - label_w - num_w;
    let mut out = format!(
        r#"<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="group" aria-label="{}" xmlns="http://www.w3.org/2000/svg">"#,
        attr(title)
    );
    for (i, b) in bars.iter().enumerate() {
        let y = 2.0 + i as f64 * row;
        let w = (b.value as f64 / max * span).max(if b.value > 0 { 1.0 } else { 0.0 });
        let label = shorten(&b.label, 48);
        let caption = b.caption.clone().unwrap_or_else(|| b.value.to_string());
        let body = format!(
            r#"<text class="label" x="0" y="{:.1}">{}<title>{}</title></text><rect class="bar" x="{label_w}" y="{:.1}" width="{w:.2}" height="{:.1}"></rect><text class="axis" x="{:.2}" y="{:.1}">{}</text>"#,
            y + row * 0.7,
            text(&label),
            text(&b.label),
            y + 3.0,
            row - 6.0,
            label_w + w + 6.0,
            y + row * 0.7,
            text(&caption)
        );
        match &b.link {
            // Named by the text it shows.
            Some(href) => out.push_str(&format!(r#"<a href="{}">{body}</a>"#, attr(href))),
            None => out.push_str(&body),
        }
    }
    out.push_str("</svg>");
    out
}

/// At most `n` characters, with an ellipsis when cut.
fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(n - 1).collect();
        out.push('…');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(label: &str, value: u64, link: Option<&str>) -> Bar {
        Bar { label: label.into(), value, caption: None, link: link.map(str::to_string) }
    }

    #[test]
    fn charts_escape_what_messages_wrote() {
        let svg = rows(&[bar("<script>alert(1)</script>", 3, Some("/?q=\"x\"&y"))], "Top senders");
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;"));
        assert!(svg.contains(r#"href="/?q=&quot;x&quot;&amp;y""#));
    }

    #[test]
    fn charts_with_links_are_groups_of_named_links() {
        let rows = rows(&[bar("Ann", 3, Some("/?q=from:ann")), bar("Bob", 1, None)], "Top senders");
        let columns = columns(&[bar("2026-10", 3, Some("/?q=x")), bar("2026-11", 0, Some("/?q=y"))], "per month");
        for svg in [&rows, &columns] {
            assert!(svg.contains(r#"role="group""#) && !svg.contains(r#"role="img""#), "{svg}");
        }
        assert!(rows.contains(r#"<a href="/?q=from:ann"><text class="label" x="0" y="17.4">Ann<title>"#), "{rows}");
        assert_eq!(columns.matches("<a ").count(), 1, "{columns}");
        assert!(columns.contains(r#"<a href="/?q=x" aria-label="2026-10: 3">"#), "{columns}");
    }

    #[test]
    fn columns_label_the_axis_without_crowding() {
        let bars: Vec<Bar> = (0..120).map(|i| bar(&format!("m{i}"), i, None)).collect();
        let svg = columns(&bars, "per month");
        assert_eq!(svg.matches("<rect").count(), 120);
        let labels = svg.matches(r#"<text class="axis""#).count() - 1;
        assert!(labels <= 15, "{labels} axis labels");
        assert!(columns(&[], "none").is_empty());
    }
}

//! Pictures placed with a plugin's element: an `<object data>` or `<embed src>` of an image or SVG
//! the message holds is shown as the `<img>` a browser shows, where the element itself is dropped
//! (no plugin runs); anything else keeps the rewrite's handling of those elements.

use lol_html::html_content::{ContentType, Element};

use super::{attribute_value, css, decode_entities, State, Use};

/// Attributes of an `<object>` or `<embed>` its `<img>` keeps: how it is laid out and named.
const PICTURE_ATTRIBUTES: &[&str] = &["id", "class", "title", "width", "height", "align", "hspace", "vspace", "border"];

/// An `<object data>` or `<embed src>` of a picture the message holds becomes an `<img>` of it,
/// of the same size and title (an `alt` too), its fallback content gone: what a browser shows,
/// where the element itself would otherwise be dropped (no plugin runs). A picture is what the
/// part is served as (see [`is_picture`]), or, where its type is not known, what the element's
/// `type` says. Through `<img>` an SVG runs no script and loads nothing. `true` when it did.
pub(super) fn show_picture(el: &mut Element<'_, '_>, tag: &str, st: &mut State<'_>) -> bool {
    let Some(reference) = el.get_attribute(if tag == "object" { "data" } else { "src" }) else {
        return false;
    };
    let reference = decode_entities(&reference);
    let Some(served) = st.resolver.part_type(&st.base, &reference) else { return false };
    let picture = match served.as_str() {
        "application/octet-stream" => el.get_attribute("type").is_some_and(|t| is_picture(&decode_entities(&t))),
        served => is_picture(served),
    };
    if !picture {
        return false;
    }
    let Some(source) = st.map(&reference, Use::Resource) else { return false };
    let mut img = format!("<img src=\"{}\"", attribute_value(&source.url));
    for name in PICTURE_ATTRIBUTES {
        if let Some(value) = el.get_attribute(name) {
            img.push_str(&format!(" {name}=\"{}\"", attribute_value(&decode_entities(&value))));
        }
    }
    if let Some(title) = el.get_attribute("title") {
        img.push_str(&format!(" alt=\"{}\"", attribute_value(&decode_entities(&title))));
    }
    if let Some(style) = el.get_attribute("style") {
        let style = decode_entities(&style);
        let base = st.base.clone();
        let style = css::rewrite_css_with(&style, &base, st);
        img.push_str(&format!(" style=\"{}\"", attribute_value(&style)));
    }
    img.push('>');
    el.replace(&img, ContentType::Html);
    true
}

/// Types a browser shows in an `<img>`: those it shows as an image by themselves, and SVG.
fn is_picture(media_type: &str) -> bool {
    let media_type = media_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    media_type == "image/svg+xml" || crate::parse::IMAGE_DOCUMENT_TYPES.contains(&media_type.as_str())
}

//! An XHTML page's prolog: a browser reads the page as XML and applies its `<?xml-stylesheet?>`s,
//! which mean nothing to the HTML the rewritten page is answered as; each becomes the
//! `<link rel="stylesheet">` it stands for (see `rewrite_element`, which writes them before the
//! root element).

use super::{attribute_value, decode_entities, State, Use};

/// The most `<?xml-stylesheet?>`s a document's prolog gives stylesheets (a browser takes all; a
/// hostile document could give millions).
pub(super) const MAX_XML_STYLESHEETS: usize = 32;

/// A processing instruction before the root element, as lol_html gives it (`?target data?`): an
/// `<?xml-stylesheet?>` of a CSS stylesheet (its `type` `text/css`, or none; not an alternate one,
/// which no browser applies by itself) adds the `<link>` that stands for it, its `href` resolved as
/// any stylesheet's (XML stylesheets, XSLT, are never run). One whose pseudo-attributes cannot be
/// read is ignored, as browsers ignore it.
pub(super) fn xml_stylesheet(text: &str, st: &mut State<'_>) {
    let Some(data) = text.strip_prefix("?xml-stylesheet") else { return };
    if !data.starts_with(|c: char| c.is_ascii_whitespace()) || st.xml_stylesheet_count >= MAX_XML_STYLESHEETS {
        return;
    }
    let Some(attributes) = pseudo_attributes(data.strip_suffix('?').unwrap_or(data)) else { return };
    let get = |name: &str| attributes.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str());
    let css = get("type").is_none_or(|t| t.trim().eq_ignore_ascii_case("text/css"));
    let alternate = get("alternate") == Some("yes");
    let Some(href) = get("href").filter(|_| css && !alternate) else { return };
    st.xml_stylesheet_count += 1;
    let Some(target) = st.map(href, Use::Resource) else { return };
    let mut link = format!("<link rel=\"stylesheet\" href=\"{}\"", attribute_value(&target.url));
    for name in ["media", "title"] {
        if let Some(value) = get(name) {
            link.push_str(&format!(" {name}=\"{}\"", attribute_value(value)));
        }
    }
    link.push('>');
    st.xml_stylesheets.push_str(&link);
}

/// The pseudo-attributes of a processing instruction (`href="a.css" type='text/css'`), their
/// values' references decoded; `None` when they are not written so.
fn pseudo_attributes(data: &str) -> Option<Vec<(&str, String)>> {
    let mut attributes = Vec::new();
    let mut rest = data.trim_start();
    while !rest.is_empty() {
        let (name, after) = rest.split_once('=')?;
        let name = name.trim_end();
        if name.is_empty() || name.contains(|c: char| c.is_ascii_whitespace()) {
            return None;
        }
        let after = after.trim_start();
        let quote = after.chars().next().filter(|&q| q == '"' || q == '\'')?;
        let (value, tail) = after[1..].split_once(quote)?;
        attributes.push((name, decode_entities(value)));
        if !(tail.is_empty() || tail.starts_with(|c: char| c.is_ascii_whitespace())) {
            return None;
        }
        rest = tail.trim_start();
    }
    Some(attributes)
}

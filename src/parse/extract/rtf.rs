//! RTF documents, read by the reader that reads the RTF bodies of Outlook messages
//! ([`crate::parse::rtf`]): its text, or, for RTF that carries HTML (`\fromhtml1`), the text a
//! reader of that HTML sees.

use super::{Halt, Sink};
use crate::parse::rtf::{self, Content};

pub(super) fn read(bytes: &[u8], sink: &mut Sink) -> Result<(), Halt> {
    match rtf::read(bytes) {
        Content::Text(text) => sink.push(&text)?,
        Content::Html(html) => {
            let visible = (sink.html)(&html);
            sink.push(&visible)?;
        }
    }
    Ok(())
}

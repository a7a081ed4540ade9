//! Text files and HTML attached to a message, read as bodies are: text in the charset it declared
//! or, without one, the one found as for bodies ([`crate::parse::charset`]); HTML as the text a
//! reader sees, through the same function as HTML bodies.

use super::{Halt, Sink};

/// Plain text (`.txt`, `.csv`, a calendar, a log): as it is.
pub(super) fn plain(text: &str, sink: &mut Sink) -> Result<(), Halt> {
    // Line by line, so that a huge file still meets its deadline.
    for line in text.split_inclusive('\n') {
        sink.tick()?;
        sink.push(line)?;
    }
    Ok(())
}

/// HTML: the text a reader sees.
pub(super) fn html(html: &str, sink: &mut Sink) -> Result<(), Halt> {
    let visible = (sink.html)(html);
    sink.push(&visible)?;
    Ok(())
}

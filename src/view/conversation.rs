//! A whole conversation on one page, as a reader sees it, free of HTTP: each message's headers and
//! body in reading order (replies after what they answer), quoted text folded, and the texts a
//! message has after its body (a list's footer, a PS after an attachment) folded too, since
//! a list's footer would otherwise repeat down the thread.

use super::format::shown_subject;
use super::list::{label_links, LabelLink};
use super::message::{attachments, frame_class, more_bodies, text_of, Attachment, MoreBody};
use super::View;
use crate::dates::long_date;
use crate::error::Error;
use crate::route;

/// Messages a conversation page shows; a longer thread is listed on each message's page.
pub(crate) const CONVERSATION_MAX: usize = 100;

/// One message of a conversation.
pub(crate) struct ConversationMessage {
    pub subject: String,
    pub from: Option<String>,
    pub to: Option<String>,
    pub cc: Option<String>,
    pub date: Option<String>,
    pub url: String,
    /// Where its body's frame loads from: the HTML body with its quotes folded, or a body that is
    /// an image.
    pub html_src: Option<String>,
    /// Its text body rendered, quotes folded, when it has no HTML one.
    pub text_html: Option<String>,
    /// The texts after its body ([`crate::model::Message::more_bodies`]), shown folded.
    pub more: Vec<MoreBody>,
    pub attachments: Vec<Attachment>,
    pub labels: Vec<LabelLink>,
    /// The one the conversation was opened at.
    pub current: bool,
    /// The class that sets the body frame's starting height (see [`crate::view::frame`]).
    pub frame_class: &'static str,
}

/// A conversation's page.
pub(crate) struct ConversationView {
    /// Its first message's subject.
    pub subject: String,
    pub messages: Vec<ConversationMessage>,
    /// Messages of the thread not shown (beyond [`CONVERSATION_MAX`]).
    pub more: usize,
}

impl ConversationView {
    /// The conversation of the message with URL id `key`, read in full. Blocking. A message of it
    /// that cannot be read is left out.
    pub(crate) fn build(view: &View, key: &str) -> Result<ConversationView, Error> {
        let opened = view.find(key).ok_or(Error::MessageNotFound)?;
        let thread = view.thread(opened);
        let more = thread.len().saturating_sub(CONVERSATION_MAX);
        let messages: Vec<ConversationMessage> = thread
            .iter()
            .take(CONVERSATION_MAX)
            .filter_map(|t| {
                let loaded = view.opened(view.read_now(t.id)?);
                let msg = loaded.message();
                let key = &loaded.entry.key;
                let html_src = msg
                    .html_body
                    .map(|i| format!("{}?fold=1", route::part_url(key, msg, i)))
                    .or_else(|| msg.image_body.map(|i| route::part_url(key, msg, i)));
                let text_html = if html_src.is_none() { msg.text_body.map(|i| text_of(msg, i, true)) } else { None };
                Some(ConversationMessage {
                    subject: shown_subject(msg.summary.subject.as_deref()),
                    from: msg.summary.from.clone(),
                    to: msg.summary.to.clone(),
                    cc: msg.summary.cc.clone(),
                    date: msg.summary.date.as_deref().map(long_date),
                    url: route::message_url(key),
                    html_src,
                    text_html,
                    more: more_bodies(key, msg, ""),
                    attachments: attachments(key, msg),
                    labels: label_links(&loaded.entry.labels),
                    current: t.id == opened,
                    frame_class: frame_class(msg),
                })
            })
            .collect();
        Ok(ConversationView {
            subject: messages.first().map_or_else(|| shown_subject(None), |m| m.subject.clone()),
            messages,
            more,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::fixtures::{mail, Fixture};

    #[test]
    fn conversations_read_in_reply_order_with_quotes_folded() {
        let fx = Fixture::of(&[
            ("a.eml", mail("a@x", "Plans", 1, "X-Keywords: Work\n", "first")),
            ("c.eml", mail("c@x", "Re: Plans", 3, "In-Reply-To: <b@x>\n", "third\n> second\n")),
            ("b.eml", mail("b@x", "Re: Plans", 2, "In-Reply-To: <a@x>\n", "second\n> first\n")),
            ("h.eml", mail("h@x", "Re: Plans", 4, "In-Reply-To: <a@x>\nContent-Type: text/html\n", "<p>html</p>")),
            (
                "f.eml",
                mail(
                    "f@x",
                    "Re: Plans",
                    5,
                    "In-Reply-To: <c@x>\nContent-Type: multipart/mixed; boundary=b\n",
                    "--b\nContent-Type: text/plain\n\nfifth\n--b\nContent-Type: text/plain\n\nList footer\n--b--\n",
                ),
            ),
        ]);
        let page = ConversationView::build(&fx.view, "b@x").unwrap();
        assert_eq!(page.subject, "Plans");
        let shown: Vec<_> = page.messages.iter().map(|m| (m.url.as_str(), m.current)).collect();
        assert_eq!(
            shown,
            [
                ("/message/a@x", false),
                ("/message/b@x", true),
                ("/message/c@x", false),
                ("/message/f@x", false),
                ("/message/h@x", false)
            ]
        );
        let folded = page.messages[1].text_html.as_deref().unwrap();
        assert!(folded.contains("<details class=\"quoted\">"), "{folded}");
        assert_eq!(page.messages[4].html_src.as_deref(), Some("/part/h@x/~1?fold=1"));
        assert!(page.messages[4].text_html.is_none());
        // A text after the body comes with its message.
        let more: Vec<_> = page.messages[3].more.iter().filter_map(|m| m.text_html.as_deref()).collect();
        assert!(more.len() == 1 && more[0].contains("List footer"), "{more:?}");
        assert!(page.messages[..3].iter().all(|m| m.more.is_empty()));
        assert_eq!(page.messages[0].labels.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["Work"]);
        assert_eq!((page.more, page.messages[0].date.as_deref()), (0, Some("2024-01-01 10:00:00 +01:00")));
        assert!(matches!(ConversationView::build(&fx.view, "nobody@x"), Err(Error::MessageNotFound)));
    }
}

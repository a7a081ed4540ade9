//! The OpenAPI 3.1 document, assembled from the annotations on the handlers themselves, so it
//! describes exactly the routes `app()` serves, and the handler that serves it.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use utoipa::OpenApi;

use super::error::{ApiError, Problem};
use super::{api, export, pages, parts, print, seals, thumbs};
use crate::error::Error;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "mailshelf",
        description = "Saved email and MHTML archives as pages and parts. Ids in paths are RFC 2392 \
            url-addr-specs: a Message-ID or Content-ID without angle brackets, percent-encoded. \
            Every route answers 421 (problem+json) to a Host that is not an IP address, localhost \
            or a name allowed with --allowed-host, and every write 403 when a browser says it comes \
            from another site.",
        license(name = "MIT OR Apache-2.0")
    ),
    paths(
        api::status,
        api::list_messages,
        api::folders,
        api::labels,
        api::stats,
        api::get_message,
        api::upload,
        api::delete_message,
        openapi,
        parts::part,
        parts::raw,
        thumbs::thumb,
        pages::list::list,
        pages::list::folder,
        pages::list::label,
        pages::conversation::conversation,
        pages::overview::overview,
        pages::message::message,
        // Taking mail out.
        export::export,
        print::print,
        print::pdf,
    ),
    components(schemas(
        api::Status,
        api::MessageSummary,
        api::MessageList,
        api::ConversationSummary,
        api::FolderList,
        api::LabelList,
        api::LabelCount,
        crate::index::folders::FolderNode,
        crate::index::labels::LabelNode,
        crate::view::stats::Stats,
        crate::view::stats::Count,
        crate::view::stats::Attachments,
        crate::view::stats::TypeCount,
        api::MessageDetail,
        api::PartNode,
        api::EnclosedMessage,
        api::ExternalBody,
        api::ThreadItem,
        seals::PartRole,
        seals::SecurityInfo,
        seals::SignatureInfo,
        seals::SecurityProtocol,
        seals::SignatureStatusName,
        seals::CertificateSummary,
        seals::EncryptionInfo,
        seals::EncryptionStatusName,
        Problem
    )),
    modifiers(&Accounts),
    tags(
        (name = "messages", description = "List, read, upload and delete messages"),
        (name = "parts", description = "Body parts and raw messages, served like files"),
        (name = "pages", description = "HTML pages for people"),
        (name = "status", description = "Indexing progress and this document"),
    )
)]
pub(crate) struct ApiDoc;

/// With accounts (`--users`, single sign-on), every route but `/api/status`, this document, the
/// sign-in pages and static files needs a reader: HTTP Basic or the session cookie set at sign-in.
/// Without accounts none is needed, so each operation lists both and the empty requirement.
struct Accounts;

impl utoipa::Modify for Accounts {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::response::ResponseBuilder;
        use utoipa::openapi::security::SecurityScheme;
        use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement};
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "basic",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Basic)
                    .description(Some("A user of the users file (`mailshelf user add`)"))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                super::guard::cookie_name(false),
                "Set by signing in at /login; named __Host-mailshelf over HTTPS",
            ))),
        );
        let open = ["/api/status", "/api/openapi.json"];
        for (path, item) in doc.paths.paths.iter_mut() {
            if open.contains(&path.as_str()) {
                continue;
            }
            for op in [&mut item.get, &mut item.post, &mut item.delete, &mut item.head].into_iter().flatten() {
                op.security = Some(vec![
                    SecurityRequirement::default(),
                    SecurityRequirement::new("basic", Vec::<String>::new()),
                    SecurityRequirement::new("session", Vec::<String>::new()),
                ]);
                let unauthorized = ResponseBuilder::new()
                    .description("With accounts: no reader signed in (`WWW-Authenticate: Basic` for the API; a page redirects to /login with 303 instead)")
                    .build();
                op.responses.responses.entry("401".to_string()).or_insert(unauthorized.into());
            }
            for op in [&mut item.post, &mut item.delete].into_iter().flatten() {
                let refused = ResponseBuilder::new()
                    .description("With accounts, a reader who is no admin (an upload also an admin whose folders leave out `Uploads`, where uploads are filed); and any write from another site's page")
                    .build();
                op.responses.responses.entry("403".to_string()).or_insert(refused.into());
            }
        }
    }
}

/// The API described: this document.
#[utoipa::path(get, path = "/api/openapi.json", tag = "status",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json")))]
pub(crate) async fn openapi() -> Response {
    match ApiDoc::openapi().to_json() {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => ApiError(Error::internal("openapi document", e)).into_response(),
    }
}

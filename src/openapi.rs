//! The OpenAPI 3.1 document, assembled from the annotations on the handlers themselves, so it
//! describes exactly the routes `app()` serves.

use utoipa::OpenApi;

use crate::{api, files, pages};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "mailshelf",
        description = "Saved email and MHTML archives as pages and parts. Ids in paths are RFC 2392 \
            url-addr-specs: a Message-ID or Content-ID without angle brackets, percent-encoded.",
        license(name = "MIT OR Apache-2.0")
    ),
    paths(
        api::status,
        api::list_messages,
        api::get_message,
        api::upload,
        api::delete_message,
        api::openapi,
        files::part,
        files::raw,
        pages::list,
        pages::message,
    ),
    components(schemas(
        api::Status,
        api::MessageSummary,
        api::MessageList,
        api::MessageDetail,
        api::PartNode,
        api::ThreadItem,
        api::Problem
    )),
    tags(
        (name = "messages", description = "List, read, upload and delete messages"),
        (name = "parts", description = "Body parts and raw messages, served like files"),
        (name = "pages", description = "HTML pages for people"),
        (name = "status", description = "Indexing progress and this document"),
    )
)]
pub struct ApiDoc;

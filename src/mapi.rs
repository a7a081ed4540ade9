//! MAPI properties, as Outlook keeps them in `.msg` files, in `.pst`/`.ost` data files and in TNEF
//! streams: the property types (MS-OXCDATA §2.11.1), the property ids mailshelf reads with their
//! names (MS-OXPROPS, one table), the named-property sets it looks into, and the one rule by which
//! 8-bit strings (PT_STRING8) are read: by the code page of the message they belong to.
//!
//! A leaf: the three readers (`ingest::pst`, `parse::outlook`, `parse::tnef`) use it, and it uses
//! nothing of theirs; code pages become encodings in `parse::codepage`.

use crate::parse::codepage;

// Property types (MS-OXCDATA §2.11.1).
pub const PT_SHORT: u16 = 0x0002;
pub const PT_LONG: u16 = 0x0003;
pub const PT_FLOAT: u16 = 0x0004;
pub const PT_DOUBLE: u16 = 0x0005;
pub const PT_CURRENCY: u16 = 0x0006;
pub const PT_APPTIME: u16 = 0x0007;
pub const PT_ERROR: u16 = 0x000a;
pub const PT_BOOLEAN: u16 = 0x000b;
pub const PT_OBJECT: u16 = 0x000d;
pub const PT_I8: u16 = 0x0014;
pub const PT_STRING8: u16 = 0x001e;
pub const PT_UNICODE: u16 = 0x001f;
pub const PT_SYSTIME: u16 = 0x0040;
pub const PT_CLSID: u16 = 0x0048;
pub const PT_BINARY: u16 = 0x0102;
/// The flag that makes a type multi-valued (`PT_MV_BINARY` is `MV_FLAG | PT_BINARY`).
pub const MV_FLAG: u16 = 0x1000;
pub const PT_MV_BINARY: u16 = MV_FLAG | PT_BINARY;

/// The size of a value of a fixed-size type; `None` for the variable-size ones (strings, binaries,
/// objects, multi-valued types).
pub fn fixed_size(ty: u16) -> Option<usize> {
    match ty {
        PT_SHORT => Some(2),
        PT_LONG | PT_FLOAT | PT_ERROR | PT_BOOLEAN => Some(4),
        PT_DOUBLE | PT_CURRENCY | PT_APPTIME | PT_I8 | PT_SYSTIME => Some(8),
        PT_CLSID => Some(16),
        _ => None,
    }
}

/// Declares each property id as a constant and lists it with its MS-OXPROPS name in [`NAMES`].
macro_rules! properties {
    ($($(#[$doc:meta])* $constant:ident = $id:literal, $name:literal;)*) => {
        $($(#[$doc])* pub const $constant: u16 = $id;)*
        /// Every property id mailshelf reads, with its canonical name (MS-OXPROPS).
        pub const NAMES: &[(u16, &str)] = &[$(($id, $name)),*];
    };
}

properties! {
    MESSAGE_CLASS = 0x001a, "PidTagMessageClass";
    SUBJECT = 0x0037, "PidTagSubject";
    CLIENT_SUBMIT_TIME = 0x0039, "PidTagClientSubmitTime";
    SENT_REPRESENTING_NAME = 0x0042, "PidTagSentRepresentingName";
    SENT_REPRESENTING_ADDRTYPE = 0x0064, "PidTagSentRepresentingAddressType";
    SENT_REPRESENTING_EMAIL = 0x0065, "PidTagSentRepresentingEmailAddress";
    TRANSPORT_HEADERS = 0x007d, "PidTagTransportMessageHeaders";
    RECIPIENT_TYPE = 0x0c15, "PidTagRecipientType";
    SENDER_NAME = 0x0c1a, "PidTagSenderName";
    SENDER_ADDRTYPE = 0x0c1e, "PidTagSenderAddressType";
    SENDER_EMAIL = 0x0c1f, "PidTagSenderEmailAddress";
    DISPLAY_CC = 0x0e03, "PidTagDisplayCc";
    DISPLAY_TO = 0x0e04, "PidTagDisplayTo";
    DELIVERY_TIME = 0x0e06, "PidTagMessageDeliveryTime";
    MESSAGE_FLAGS = 0x0e07, "PidTagMessageFlags";
    ENTRY_ID = 0x0fff, "PidTagEntryId";
    BODY = 0x1000, "PidTagBody";
    RTF_COMPRESSED = 0x1009, "PidTagRtfCompressed";
    BODY_HTML = 0x1013, "PidTagHtml";
    INTERNET_MESSAGE_ID = 0x1035, "PidTagInternetMessageId";
    INTERNET_REFERENCES = 0x1039, "PidTagInternetReferences";
    IN_REPLY_TO = 0x1042, "PidTagInReplyToId";
    ATTRIBUTE_HIDDEN = 0x10f4, "PidTagAttributeHidden";
    DISPLAY_NAME = 0x3001, "PidTagDisplayName";
    ADDRTYPE = 0x3002, "PidTagAddressType";
    EMAIL_ADDRESS = 0x3003, "PidTagEmailAddress";
    CREATION_TIME = 0x3007, "PidTagCreationTime";
    LAST_MODIFICATION_TIME = 0x3008, "PidTagLastModificationTime";
    RECORD_KEY = 0x0ff9, "PidTagRecordKey";
    IPM_SUBTREE_ENTRYID = 0x35e0, "PidTagIpmSubtreeEntryId";
    CONTENT_COUNT = 0x3602, "PidTagContentCount";
    CONTENT_UNREAD_COUNT = 0x3603, "PidTagContentUnreadCount";
    SUBFOLDERS = 0x360a, "PidTagSubfolders";
    /// PidTagAttachDataBinary, or PidTagAttachDataObject when its type is PT_OBJECT.
    ATTACH_DATA = 0x3701, "PidTagAttachDataBinary";
    ATTACH_FILENAME = 0x3704, "PidTagAttachFilename";
    ATTACH_METHOD = 0x3705, "PidTagAttachMethod";
    ATTACH_LONG_FILENAME = 0x3707, "PidTagAttachLongFilename";
    ATTACH_MIME_TAG = 0x370e, "PidTagAttachMimeTag";
    ATTACH_CONTENT_ID = 0x3712, "PidTagAttachContentId";
    ATTACH_CONTENT_LOCATION = 0x3713, "PidTagAttachContentLocation";
    SMTP_ADDRESS = 0x39fe, "PidTagSmtpAddress";
    GIVEN_NAME = 0x3a06, "PidTagGivenName";
    BUSINESS_PHONE = 0x3a08, "PidTagBusinessTelephoneNumber";
    HOME_PHONE = 0x3a09, "PidTagHomeTelephoneNumber";
    SURNAME = 0x3a11, "PidTagSurname";
    COMPANY_NAME = 0x3a16, "PidTagCompanyName";
    TITLE = 0x3a17, "PidTagTitle";
    DEPARTMENT = 0x3a18, "PidTagDepartmentName";
    MOBILE_PHONE = 0x3a1c, "PidTagMobileTelephoneNumber";
    BUSINESS_FAX = 0x3a24, "PidTagBusinessFaxNumber";
    COUNTRY = 0x3a26, "PidTagCountry";
    LOCALITY = 0x3a27, "PidTagLocality";
    STATE = 0x3a28, "PidTagStateOrProvince";
    STREET = 0x3a29, "PidTagStreetAddress";
    POSTAL_CODE = 0x3a2a, "PidTagPostalCode";
    INTERNET_CODEPAGE = 0x3fde, "PidTagInternetCodepage";
    MESSAGE_LOCALE_ID = 0x3ff1, "PidTagMessageLocaleId";
    MESSAGE_CODEPAGE = 0x3ffd, "PidTagMessageCodepage";
    SENDER_SMTP_ADDRESS = 0x5d01, "PidTagSenderSmtpAddress";
    SENT_REPRESENTING_SMTP_ADDRESS = 0x5d02, "PidTagSentRepresentingSmtpAddress";
    LTP_ROW_ID = 0x67f2, "PidTagLtpRowId";
    PST_PASSWORD = 0x67ff, "PidTagPstPassword";
    ATTACHMENT_HIDDEN = 0x7ffe, "PidTagAttachmentHidden";
}

/// The MS-OXPROPS name of a property id, when it is one mailshelf reads.
pub fn name(id: u16) -> Option<&'static str> {
    NAMES.iter().find(|(i, _)| *i == id).map(|(_, n)| *n)
}

/// PidTagAttachMethod of an attached message (afEmbeddedMessage).
pub const ATTACH_EMBEDDED_MSG: i32 = 5;

// Named property sets (MS-OXPROPS §1.3.2), by the first field of their GUID: they all end in
// `0000-0000-C000-000000000046`.
pub const PSETID_APPOINTMENT: u32 = 0x0006_2002;
pub const PSETID_TASK: u32 = 0x0006_2003;
pub const PSETID_ADDRESS: u32 = 0x0006_2004;

/// The code page the 8-bit strings of an object are in: its own PidTagMessageCodepage, else its
/// PidTagInternetCodepage, else the one it inherits (from the message it belongs to, the store that
/// holds it, the TNEF stream that carries it). A number that names no 8-bit encoding is passed
/// over; `None` leaves [`decode8`] to its default, Windows-1252.
pub fn codepage(message: Option<u32>, internet: Option<u32>, inherited: Option<u32>) -> Option<u32> {
    let usable =
        |&cp: &u32| codepage::encoding(cp).is_some_and(|e| e != encoding_rs::UTF_16LE && e != encoding_rs::UTF_16BE);
    [message, internet, inherited].into_iter().flatten().find(usable)
}

/// 8-bit text in code page `cp` (see [`codepage`](fn@codepage); Windows-1252 when it names none).
pub fn decode8(bytes: &[u8], cp: Option<u32>) -> String {
    codepage::decode(bytes, cp)
}

/// A string value of type `ty` as text: PT_UNICODE as UTF-16 (little-endian), PT_STRING8 in code
/// page `cp`; the terminating NULs some writers keep are dropped. `None` for any other type.
pub fn string(ty: u16, bytes: &[u8], cp: Option<u32>) -> Option<String> {
    let s = match ty & !MV_FLAG {
        PT_UNICODE => codepage::utf16le(bytes),
        PT_STRING8 => decode8(bytes, cp),
        _ => return None,
    };
    Some(s.trim_end_matches('\0').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_table_names_each_property_once() {
        let mut ids: Vec<u16> = NAMES.iter().map(|(i, _)| *i).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), NAMES.len(), "an id listed twice");
        assert_eq!(name(SUBJECT), Some("PidTagSubject"));
        assert_eq!(name(MESSAGE_CODEPAGE), Some("PidTagMessageCodepage"));
        assert_eq!(name(0x1234), None);
        assert_eq!(fixed_size(PT_LONG), Some(4));
        assert_eq!(fixed_size(PT_CLSID), Some(16));
        assert_eq!(fixed_size(PT_MV_BINARY), None);
    }

    #[test]
    fn eight_bit_strings_follow_the_message_code_page() {
        let big5 = b"MSG \xae\xe6\xa6\xa1\xb4\xfa\xb8\xd5";
        type Case<'a> = (Option<u32>, Option<u32>, Option<u32>, &'a str);
        let cases: &[Case] = &[
            (Some(950), None, None, "MSG 格式測試"),
            (None, Some(950), None, "MSG 格式測試"),
            (None, None, Some(950), "MSG 格式測試"),
            // The message's own code page wins over what it inherits.
            (Some(950), Some(1252), Some(1252), "MSG 格式測試"),
            // A number that names no 8-bit encoding (or UTF-16) is passed over.
            (Some(12345), Some(1200), Some(950), "MSG 格式測試"),
            (None, None, None, "MSG ®æ¦¡´ú¸Õ"),
        ];
        for (message, internet, inherited, want) in cases {
            let cp = codepage(*message, *internet, *inherited);
            assert_eq!(string(PT_STRING8, big5, cp).as_deref(), Some(*want), "{message:?} {internet:?} {inherited:?}");
        }
        assert_eq!(string(PT_UNICODE, b"h\0i\0\0\0", None).as_deref(), Some("hi"));
        assert_eq!(string(PT_BINARY, b"hi", None), None);
    }
}

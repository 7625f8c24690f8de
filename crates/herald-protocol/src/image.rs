//! Images a tool result carries (an MCP screenshot, a rendered chart), kept
//! provider-neutral: each provider's encoder writes them in its own shape.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Largest image passed to a model, decoded (providers refuse larger ones:
/// Anthropic's limit is 5 MB per image).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// Largest total of the images of one tool result, decoded, so a single
/// tool cannot blow a request up.
pub const MAX_RESULT_IMAGE_BYTES: usize = 10 * 1024 * 1024;

/// Most images one tool result may carry (Anthropic takes 100 per request).
pub const MAX_RESULT_IMAGES: usize = 8;

/// Prompt tokens one image is counted as when sizing a conversation (an
/// image costs a fixed-ish number of tokens, not its base64 bytes / 4;
/// Anthropic's largest unscaled image is about 1,600).
pub const IMAGE_TOKEN_ESTIMATE: u64 = 1_600;

/// One image: its media type and its bytes in standard base64.
///
/// The data is shared (`Arc<str>`): a history is cloned for persistence and
/// compaction, and those clones should not copy megabytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ImageData {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp` once admitted
    /// (see [`admit_images`]).
    pub mime_type: String,
    /// Standard base64 (`A-Z a-z 0-9 + /`, `=` padding), no line breaks.
    #[serde(serialize_with = "ser_arc", deserialize_with = "de_arc")]
    #[schemars(with = "String")]
    pub data: Arc<str>,
}

fn ser_arc<S: Serializer>(data: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(data)
}

fn de_arc<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<str>, D::Error> {
    String::deserialize(d).map(Arc::from)
}

impl ImageData {
    /// An image of `mime_type` whose bytes are `data` (standard base64).
    pub fn new(mime_type: impl Into<String>, data: impl Into<Arc<str>>) -> Self {
        Self {
            mime_type: mime_type.into(),
            data: data.into(),
        }
    }

    /// The number of bytes the base64 data encodes (without decoding it).
    pub fn decoded_len(&self) -> usize {
        base64_decoded_len(&self.data)
    }

    /// The image as a `data:` URL (`data:image/png;base64,...`), written
    /// piece by piece where a formatter or serializer wants it, without
    /// building the string.
    pub fn data_url(&self) -> DataUrl<'_> {
        DataUrl(self)
    }
}

/// [`ImageData::data_url`]: displays as `data:<mime>;base64,<data>` and
/// serialises as that string.
#[derive(Debug, Clone, Copy)]
pub struct DataUrl<'a>(&'a ImageData);

impl fmt::Display for DataUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "data:{};base64,{}", self.0.mime_type, self.0.data)
    }
}

impl Serialize for DataUrl<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Bytes encoded by a base64 text of well-formed length.
fn base64_decoded_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count().min(2);
    (data.len() / 4 * 3 + (data.len() % 4).saturating_sub(1)).saturating_sub(padding)
}

/// The bytes of `data` when it is standard base64 a provider accepts (the
/// alphabet, a length that is a multiple of 4, canonical padding).
fn decode_base64(data: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()
        .filter(|bytes| !bytes.is_empty())
}

/// The media type the image's first bytes show: PNG, JPEG, GIF or WebP
/// (the formats both providers take), else `None`.
fn sniff(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A size for notes: bytes, KB, or MB with one decimal (`5 MB` when whole).
fn human(bytes: usize) -> String {
    const MB: usize = 1024 * 1024;
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    if bytes < MB {
        return format!("{} KB", bytes.div_ceil(1024));
    }
    if bytes.is_multiple_of(MB) {
        return format!("{} MB", bytes / MB);
    }
    #[allow(clippy::cast_precision_loss)]
    let mb = bytes as f64 / MB as f64;
    format!("{mb:.1} MB")
}

/// Keeps the images of one tool result a model can take and says in `text`
/// why each other one was dropped (one line each):
///
/// * the data must be standard base64 (line breaks are removed first);
/// * the bytes must be PNG, JPEG, GIF or WebP; the media type is set from
///   them when the tool named another (providers refuse a mismatch);
/// * at most [`MAX_IMAGE_BYTES`] each, [`MAX_RESULT_IMAGE_BYTES`] and
///   [`MAX_RESULT_IMAGES`] together.
///
/// A dropped image would otherwise fail every later request of the
/// conversation, so nothing questionable is let through.
pub fn admit_images(images: &mut Vec<ImageData>, text: &mut String) {
    if images.is_empty() {
        return;
    }
    let mut total = 0usize;
    let mut kept = 0usize;
    let mut notes: Vec<String> = Vec::new();
    images.retain_mut(|image| {
        if image.data.bytes().any(|b| b.is_ascii_whitespace()) {
            let clean: String = image
                .data
                .chars()
                .filter(|c| !c.is_ascii_whitespace())
                .collect();
            image.data = Arc::from(clean);
        }
        let declared = image.mime_type.as_str();
        let Some(bytes) = decode_base64(&image.data) else {
            notes.push(format!(
                "[image dropped: its {declared} data is not valid base64]"
            ));
            return false;
        };
        let size = bytes.len();
        let Some(format) = sniff(&bytes[..bytes.len().min(12)]) else {
            notes.push(format!(
                "[image dropped: {declared} of {} is not PNG, JPEG, GIF or WebP, which the model cannot read]",
                human(size)
            ));
            return false;
        };
        if size > MAX_IMAGE_BYTES {
            notes.push(format!(
                "[image dropped: {format} of {} is over the {} limit per image]",
                human(size),
                human(MAX_IMAGE_BYTES)
            ));
            return false;
        }
        if kept == MAX_RESULT_IMAGES || total + size > MAX_RESULT_IMAGE_BYTES {
            notes.push(format!(
                "[image dropped: {format} of {}; one result may pass at most {MAX_RESULT_IMAGES} images and {} to the model]",
                human(size),
                human(MAX_RESULT_IMAGE_BYTES)
            ));
            return false;
        }
        if image.mime_type != format {
            image.mime_type = format.to_owned();
        }
        total += size;
        kept += 1;
        true
    });
    for note in notes {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&note);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A 1x1 PNG.
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

    fn b64(bytes: &[u8]) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn head(data: &str) -> Vec<u8> {
        let bytes = decode_base64(data).unwrap();
        bytes[..bytes.len().min(12)].to_vec()
    }

    #[test]
    fn lengths_and_sniffing() {
        assert_eq!(base64_decoded_len("QQ=="), 1);
        assert_eq!(base64_decoded_len("QUI="), 2);
        assert_eq!(base64_decoded_len("QUJD"), 3);
        assert_eq!(ImageData::new("image/png", PNG).decoded_len(), 70);
        assert_eq!(head(PNG)[..8], *b"\x89PNG\r\n\x1a\n");
        assert_eq!(head("QUI="), b"AB");
        assert_eq!(sniff(&head(PNG)), Some("image/png"));
        assert_eq!(
            sniff(&head(&b64(b"\xff\xd8\xff\xe0xx"))),
            Some("image/jpeg")
        );
        assert_eq!(sniff(&head(&b64(b"GIF89a..."))), Some("image/gif"));
        assert_eq!(
            sniff(&head(&b64(b"RIFF\x10\0\0\0WEBPVP8 "))),
            Some("image/webp")
        );
        assert_eq!(sniff(&head(&b64(b"<svg xmlns="))), None);
        for bad in ["QUJ", "QU=D", "Q===", "", "QU J"] {
            assert!(decode_base64(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn data_url_serialises_without_an_intermediate_string() {
        let image = ImageData::new("image/png", "QUJD");
        assert_eq!(image.data_url().to_string(), "data:image/png;base64,QUJD");
        assert_eq!(
            serde_json::to_string(&image.data_url()).unwrap(),
            "\"data:image/png;base64,QUJD\""
        );
        assert_eq!(
            serde_json::to_string(&image).unwrap(),
            r#"{"mime_type":"image/png","data":"QUJD"}"#
        );
        let back: ImageData =
            serde_json::from_str(r#"{"mime_type":"image/png","data":"QUJD"}"#).unwrap();
        assert_eq!(back, image);
    }

    #[test]
    fn admission_keeps_good_images_fixes_types_and_notes_each_drop() {
        let big = format!(
            "{}{}",
            b64(b"\x89PNG\r\n\x1a\n\0"),
            "A".repeat(MAX_IMAGE_BYTES / 3 * 4 + 8)
        );
        let mut images = vec![
            ImageData::new("image/png", PNG),
            // Wrapped lines are joined; the declared type follows the bytes.
            ImageData::new("image/jpeg", format!("{}\n{}", &PNG[..40], &PNG[40..])),
            ImageData::new("image/png", "not base64!"),
            ImageData::new(
                "image/svg+xml",
                b64(b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>"),
            ),
            ImageData::new("image/png", big),
        ];
        let mut text = "[image: image/png, 70 bytes]".to_owned();
        admit_images(&mut images, &mut text);
        assert_eq!(images.len(), 2);
        assert_eq!(images[0], ImageData::new("image/png", PNG));
        assert_eq!(images[1], ImageData::new("image/png", PNG));
        assert_eq!(
            text,
            "[image: image/png, 70 bytes]\n\
             [image dropped: its image/png data is not valid base64]\n\
             [image dropped: image/svg+xml of 41 bytes is not PNG, JPEG, GIF or WebP, which the model cannot read]\n\
             [image dropped: image/png of 5.0 MB is over the 5 MB limit per image]"
        );
    }

    #[test]
    fn admission_caps_the_count_and_total_of_one_result() {
        let mut images = vec![ImageData::new("image/png", PNG); MAX_RESULT_IMAGES + 1];
        let mut text = String::new();
        admit_images(&mut images, &mut text);
        assert_eq!(images.len(), MAX_RESULT_IMAGES);
        assert_eq!(
            text,
            "[image dropped: image/png of 70 bytes; one result may pass at most 8 images and 10 MB to the model]"
        );
        // Three images of 4 MB: the third passes the 10 MB total.
        let four_mb = format!(
            "{}{}",
            b64(b"\x89PNG\r\n\x1a\n\0"),
            "A".repeat(4 * 1024 * 1024 / 3 * 4)
        );
        let mut images = vec![ImageData::new("image/png", four_mb); 3];
        let mut text = String::new();
        admit_images(&mut images, &mut text);
        assert_eq!(images.len(), 2);
        assert_eq!(text.lines().count(), 1);
        // Nothing to do: the text is untouched.
        let mut none = Vec::new();
        let mut text = "x".to_owned();
        admit_images(&mut none, &mut text);
        assert_eq!(text, "x");
    }
}

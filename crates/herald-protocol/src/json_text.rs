//! JSON string literals written by hand, for the paths that write the same
//! large texts over and over (request bodies, stored events): the bytes are
//! exactly those serde_json writes, but the characters that need escaping
//! are found 16 bytes at a time instead of one by one.

/// Appends `text` as a JSON string literal, quotes included, escaped
/// byte-for-byte as `serde_json` escapes it (so a body written with it is
/// the body serde would write).
pub fn push_json_str(out: &mut Vec<u8>, text: &str) {
    #[cfg(target_arch = "x86_64")]
    {
        sse2::push_json_str(out, text);
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        push_json_str_bytewise(out, text);
    }
}

/// [`push_json_str`] a byte at a time: the reference the vectorised one is
/// tested against, and the one other architectures use.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn push_json_str_bytewise(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut run_start = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        if needs_escape(byte) {
            out.extend_from_slice(&bytes[run_start..at]);
            push_escape(out, byte);
            run_start = at + 1;
        }
    }
    out.extend_from_slice(&bytes[run_start..]);
    out.push(b'"');
}

/// Whether JSON needs `byte` escaped: a control character, `"` or `\`.
fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// Appends the escape of `byte` (one that [`needs_escape`]).
fn push_escape(out: &mut Vec<u8>, byte: u8) {
    let (escape, length) = escape_of(byte);
    out.extend_from_slice(&escape[..length]);
}

/// The escape serde_json writes for `byte` (one that [`needs_escape`]), as
/// bytes and their count.
fn escape_of(byte: u8) -> ([u8; 6], usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x08 => b'b',
        0x0C => b'f',
        _ => {
            return (
                [
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(byte >> 4)],
                    HEX[usize::from(byte & 0xF)],
                ],
                6,
            );
        }
    };
    ([b'\\', short, 0, 0, 0, 0], 2)
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_storeu_si128,
    };

    use super::{escape_of, needs_escape};

    /// The longest escape (`\u00XX`).
    const MAX_ESCAPE: usize = 6;

    /// Copies 16 bytes at a time into the output while looking for bytes to
    /// escape in them; a block with none costs a load, a store and a few
    /// compares.
    pub(super) fn push_json_str(out: &mut Vec<u8>, text: &str) {
        let bytes = text.as_bytes();
        let len = bytes.len();
        // Room for the worst case: every byte escaped, plus the quotes.
        out.reserve(len.saturating_mul(MAX_ESCAPE).saturating_add(2));
        // SAFETY: SSE2 is part of the x86_64 baseline. Every write goes to
        // the capacity reserved above: after `src` bytes of input at most
        // `1 + 6 * src` bytes are written, a block store needs 16 more and
        // happens only while `src + 16 <= len`, and each tail byte writes at
        // most 6; so writes stay below `out.len() + 6 * len + 2`. Reads stay
        // inside `bytes`. `set_len` covers exactly the bytes written, all
        // initialised.
        unsafe {
            let start = out.as_mut_ptr().add(out.len());
            let mut dst = start;
            *dst = b'"';
            dst = dst.add(1);
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let last_control = _mm_set1_epi8(0x1F);
            let mut src = 0;
            while src + 16 <= len {
                let block = _mm_loadu_si128(bytes.as_ptr().add(src).cast::<__m128i>());
                _mm_storeu_si128(dst.cast::<__m128i>(), block);
                // Unsigned `byte <= 0x1F` is `min(byte, 0x1F) == byte`.
                let control = _mm_cmpeq_epi8(_mm_min_epu8(block, last_control), block);
                let special = _mm_or_si128(
                    control,
                    _mm_or_si128(
                        _mm_cmpeq_epi8(block, quote),
                        _mm_cmpeq_epi8(block, backslash),
                    ),
                );
                let mask = _mm_movemask_epi8(special) as u32;
                if mask == 0 {
                    src += 16;
                    dst = dst.add(16);
                    continue;
                }
                // Keep the bytes before the first to escape, escape it, and
                // go on from the byte after it.
                let plain = mask.trailing_zeros() as usize;
                src += plain;
                dst = dst.add(plain);
                dst = write_escape(dst, *bytes.get_unchecked(src));
                src += 1;
            }
            while src < len {
                let byte = *bytes.get_unchecked(src);
                if needs_escape(byte) {
                    dst = write_escape(dst, byte);
                } else {
                    *dst = byte;
                    dst = dst.add(1);
                }
                src += 1;
            }
            *dst = b'"';
            dst = dst.add(1);
            let written = dst.offset_from(start) as usize;
            out.set_len(out.len() + written);
        }
    }

    /// Writes the escape of `byte` at `dst` and returns the position after it.
    ///
    /// # Safety
    /// `dst` must have room for [`MAX_ESCAPE`] bytes.
    unsafe fn write_escape(dst: *mut u8, byte: u8) -> *mut u8 {
        let (escape, length) = escape_of(byte);
        // SAFETY: the caller guarantees room for 6 bytes; `escape` has 6.
        unsafe {
            std::ptr::copy_nonoverlapping(escape.as_ptr(), dst, MAX_ESCAPE);
            dst.add(length)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The vectorised escaper's output, checked against the bytewise one;
    /// appended after other bytes, as request bodies append.
    fn ours(text: &str) -> String {
        let mut out = b"[".to_vec();
        push_json_str(&mut out, text);
        let mut bytewise = b"[".to_vec();
        push_json_str_bytewise(&mut bytewise, text);
        assert_eq!(out, bytewise, "{text:?}");
        String::from_utf8(out[1..].to_vec()).unwrap()
    }

    #[test]
    fn every_byte_that_needs_escaping_is_escaped_as_serde_json_does() {
        for byte in 0u8..0x80 {
            let text = char::from(byte).to_string();
            assert_eq!(
                ours(&text),
                serde_json::to_string(&text).unwrap(),
                "byte {byte:#x}"
            );
        }
    }

    #[test]
    fn texts_of_every_length_and_position_match_serde_json() {
        // Escapes at every offset of and around the 16-byte blocks, with
        // multi-byte characters between them.
        let pieces = [
            "a", "\"", "\\", "\n", "\u{1}", "é", "日本", "\u{7f}", "\u{1f}", " ", "😀",
        ];
        let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
        for length in 0..80 {
            for _ in 0..40 {
                let mut text = String::new();
                for _ in 0..length {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    text.push_str(pieces[(seed % pieces.len() as u64) as usize]);
                }
                assert_eq!(
                    ours(&text),
                    serde_json::to_string(&text).unwrap(),
                    "{text:?}"
                );
            }
        }
    }

    #[test]
    fn long_text_without_escapes_is_copied_as_it_is() {
        let text = "plain words ".repeat(1000);
        assert_eq!(ours(&text), format!("\"{text}\""));
    }
}

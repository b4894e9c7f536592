//! Token estimates for images, audio and documents, per provider cost model. Media are never
//! decoded: the estimate uses the declared pixel size, detail level and payload size.

use crate::model::Media;

/// Whose published media cost model to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MediaModel {
    /// OpenAI: 512-pixel tiles for images, about 10 tokens per second of audio.
    #[default]
    OpenAi,
    /// Anthropic: image tokens ≈ pixels / 750 after downscaling.
    Anthropic,
    /// Gemini: 258 tokens per small image or per 768-pixel tile; 32 tokens per second of audio.
    Gemini,
}

impl MediaModel {
    /// Small distinct tag (for the memo key).
    pub(crate) fn tag(self) -> u8 {
        match self {
            MediaModel::OpenAi => 0,
            MediaModel::Anthropic => 1,
            MediaModel::Gemini => 2,
        }
    }
}

/// OpenAI: a low-detail image is a flat 85 tokens; a high-detail image costs 85 plus 170 per
/// 512-pixel tile after scaling into 2048x2048 and then the short side down to 768.
const OPENAI_IMAGE_BASE: usize = 85;
/// OpenAI: tokens per 512-pixel tile.
const OPENAI_IMAGE_TILE: usize = 170;
/// OpenAI: images are first fitted into a square of this side.
const OPENAI_FIT: f64 = 2048.0;
/// OpenAI: then their short side is scaled down to this.
const OPENAI_SHORT_SIDE: f64 = 768.0;
/// OpenAI: tile side in pixels.
const OPENAI_TILE_SIDE: f64 = 512.0;
/// OpenAI: an image of unknown size is assumed to be 1024x1024 (4 tiles): 765 tokens.
const OPENAI_IMAGE_UNKNOWN: usize = OPENAI_IMAGE_BASE + 4 * OPENAI_IMAGE_TILE;

/// Anthropic: an image costs about (width × height) / 750 tokens.
const ANTHROPIC_PIXELS_PER_TOKEN: f64 = 750.0;
/// Anthropic: images whose long edge exceeds 1568 pixels are scaled down to it.
const ANTHROPIC_MAX_EDGE: f64 = 1568.0;
/// Anthropic: images above about 1.15 megapixels are scaled down to it.
const ANTHROPIC_MAX_PIXELS: f64 = 1_150_000.0;
/// Anthropic: an image of unknown size is assumed to be at the size cap: about 1,600 tokens.
const ANTHROPIC_IMAGE_UNKNOWN: usize = 1_600;

/// Gemini: an image with both sides at most 384 pixels is 258 tokens; larger images are cut into
/// 768-pixel tiles of 258 tokens each.
const GEMINI_IMAGE_TOKENS: usize = 258;
/// Gemini: largest side of a single-unit image.
const GEMINI_SMALL_SIDE: u32 = 384;
/// Gemini: tile side in pixels.
const GEMINI_TILE_SIDE: f64 = 768.0;
/// Gemini: an image of unknown size is assumed to be 1024x1024 (2x2 tiles).
const GEMINI_IMAGE_UNKNOWN: usize = 4 * GEMINI_IMAGE_TOKENS;

/// Compressed audio runs at about 16 kB per second (128 kbit/s).
const AUDIO_BYTES_PER_SECOND: usize = 16_000;
/// OpenAI audio input: about 10 tokens per second. Anthropic takes no audio; the same rate stands in.
const OPENAI_AUDIO_TOKENS_PER_SECOND: usize = 10;
/// Gemini audio input: 32 tokens per second, as documented.
const GEMINI_AUDIO_TOKENS_PER_SECOND: usize = 32;

/// A PDF page is about 1,500 tokens of text plus its image; documents of unknown size count as 3 pages.
pub(crate) const DOCUMENT_UNKNOWN_TOKENS: usize = 3 * 1_500;

/// Estimated tokens of an image.
pub(crate) fn image_tokens(model: MediaModel, m: &Media) -> usize {
    match model {
        MediaModel::OpenAi => openai_image(m),
        MediaModel::Anthropic => match m.size {
            None => ANTHROPIC_IMAGE_UNKNOWN,
            Some((w, h)) => {
                let (w, h) = (f64::from(w.max(1)), f64::from(h.max(1)));
                let edge = (ANTHROPIC_MAX_EDGE / w.max(h)).min(1.0);
                let area = (ANTHROPIC_MAX_PIXELS / (w * h)).sqrt().min(1.0);
                let s = edge.min(area);
                ((w * s) * (h * s) / ANTHROPIC_PIXELS_PER_TOKEN)
                    .ceil()
                    .max(1.0) as usize
            }
        },
        MediaModel::Gemini => match m.size {
            None => GEMINI_IMAGE_UNKNOWN,
            Some((w, h)) if w <= GEMINI_SMALL_SIDE && h <= GEMINI_SMALL_SIDE => GEMINI_IMAGE_TOKENS,
            Some((w, h)) => {
                let tiles = (f64::from(w) / GEMINI_TILE_SIDE).ceil()
                    * (f64::from(h) / GEMINI_TILE_SIDE).ceil();
                tiles as usize * GEMINI_IMAGE_TOKENS
            }
        },
    }
}

fn openai_image(m: &Media) -> usize {
    if m.detail.as_deref() == Some("low") {
        return OPENAI_IMAGE_BASE;
    }
    let Some((w, h)) = m.size else {
        return OPENAI_IMAGE_UNKNOWN;
    };
    let (mut w, mut h) = (f64::from(w.max(1)), f64::from(h.max(1)));
    let fit = (OPENAI_FIT / w.max(h)).min(1.0);
    w *= fit;
    h *= fit;
    let short = (OPENAI_SHORT_SIDE / w.min(h)).min(1.0);
    w *= short;
    h *= short;
    let tiles = ((w / OPENAI_TILE_SIDE).ceil() * (h / OPENAI_TILE_SIDE).ceil()) as usize;
    OPENAI_IMAGE_BASE + tiles * OPENAI_IMAGE_TILE
}

/// Estimated tokens of an audio clip, from its payload size (at least one second).
pub(crate) fn audio_tokens(model: MediaModel, m: &Media) -> usize {
    let seconds = (m.source.approx_bytes() / AUDIO_BYTES_PER_SECOND).max(1);
    let rate = match model {
        MediaModel::Gemini => GEMINI_AUDIO_TOKENS_PER_SECOND,
        MediaModel::OpenAi | MediaModel::Anthropic => OPENAI_AUDIO_TOKENS_PER_SECOND,
    };
    seconds * rate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sized(w: u32, h: u32) -> Media {
        Media {
            size: Some((w, h)),
            ..Media::default()
        }
    }

    #[test]
    fn openai_tiles() {
        assert_eq!(
            image_tokens(MediaModel::OpenAi, &sized(1024, 1024)),
            85 + 4 * 170
        );
        assert_eq!(
            image_tokens(MediaModel::OpenAi, &sized(4096, 8192)),
            85 + 6 * 170
        );
        let low = Media {
            detail: Some("low".into()),
            ..sized(4000, 4000)
        };
        assert_eq!(image_tokens(MediaModel::OpenAi, &low), 85);
        assert_eq!(image_tokens(MediaModel::OpenAi, &Media::default()), 765);
    }

    #[test]
    fn anthropic_pixels() {
        // 1000x1000 is under both caps: 1,000,000 / 750.
        assert_eq!(
            image_tokens(MediaModel::Anthropic, &sized(1000, 1000)),
            1334
        );
        // A huge image is capped near 1.15 MP.
        let big = image_tokens(MediaModel::Anthropic, &sized(8000, 6000));
        assert!((1500..=1600).contains(&big), "{big}");
    }

    #[test]
    fn gemini_tiles_and_audio() {
        assert_eq!(image_tokens(MediaModel::Gemini, &sized(300, 200)), 258);
        assert_eq!(
            image_tokens(MediaModel::Gemini, &sized(1024, 1024)),
            4 * 258
        );
        let clip = Media {
            source: crate::model::MediaSource::Base64("A".repeat(213_336)),
            ..Media::default()
        };
        assert_eq!(audio_tokens(MediaModel::Gemini, &clip), 10 * 32);
        assert_eq!(audio_tokens(MediaModel::OpenAi, &clip), 10 * 10);
    }
}

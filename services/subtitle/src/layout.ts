/**
 * How burned-in cues are laid out on a frame of a given size. libass sizes text from its script's
 * play resolution; the script we give it has the frame's proportions and a shorter side of 288 script
 * pixels (`subtitlePlayResolution`), so text, outline and margins are sized from the frame's shorter
 * side: a 720×1280 phone video gets the same pixel sizes as a 1280×720 one, where sizing from the
 * height drew its text almost twice as large and wrapped a two-line cue into four.
 *
 * A portrait frame is narrower than a landscape one at the same text size, so the cue rules' line
 * length is cut to what fits the frame's width between the side margins: libass then never wraps a
 * line of ours and a cue stays at most two lines. The widths are measured with libass and the Noto
 * fonts (average advance per character, in units of the ASS font size): Latin and Cyrillic text
 * 0.33–0.39, Latin capitals 0.48, Devanagari 0.47, Ethiopic 0.41, Arabic and Urdu under 0.3, full-width
 * Chinese and Japanese 0.67, Korean 0.47–0.63. A frame at least as wide as 4:3 keeps the rules' 42
 * (16 for CJK) characters at the default size.
 */
import type { Language } from "@voiceloc/contracts";
import { subtitlePlayResolution, type SubtitleStyle } from "@voiceloc/media";
import { cueRulesFor, type CueRules } from "./cues.ts";
import { SUBTITLE_FONTS } from "./languages.ts";

/** Font size in script pixels (the script's shorter side is 288). */
export const DEFAULT_BURN_IN_FONT_SIZE = 16;

/** Bottom margin and side margins, in script pixels. */
const MARGIN_V = 14;
const MARGIN_SIDE = 10;

/** Width allowed per character, in units of the font size: above the widest measured ordinary text. */
const CHAR_WIDTH = 0.5;
const FULL_WIDTH_CHAR_WIDTH = 0.7;
const FULL_WIDTH: ReadonlySet<Language> = new Set<Language>(["Chinese", "Japanese", "Korean"]);

export interface BurnInLayout {
  /** The libass overrides: play resolution, font, size, outline, margins. */
  style: SubtitleStyle;
  /** The target language's cue rules, with lines no longer than the frame's width holds. */
  rules: CueRules;
}

/**
 * The style and cue rules for burning `language` cues into frames of `frame`'s size (the upright
 * frame the filter sees; see `uprightFrameSize`). Lines are shortened to what fits the width, never
 * below half the rules' length: a font so large that fewer characters fit is made smaller instead.
 */
export function burnInLayout(frame: { width: number; height: number }, language: Language, fontSize: number = DEFAULT_BURN_IN_FONT_SIZE): BurnInLayout {
  if (!Number.isFinite(fontSize) || fontSize < 4 || fontSize > 400) throw new RangeError("The burn-in font size must be between 4 and 400 script pixels.");
  const base = cueRulesFor(language);
  const { playResX, playResY } = subtitlePlayResolution(frame.width, frame.height);
  const room = playResX - 2 * MARGIN_SIDE;
  const perChar = FULL_WIDTH.has(language) ? FULL_WIDTH_CHAR_WIDTH : CHAR_WIDTH;
  const fits = Math.floor(room / (fontSize * perChar));
  const fewest = Math.ceil(base.maxLineChars / 2);
  const size = fits >= fewest ? fontSize : Math.floor((room / (fewest * perChar)) * 10) / 10;
  const maxLineChars = Math.min(base.maxLineChars, Math.max(fewest, fits));
  return {
    style: {
      playResX,
      playResY,
      fontName: SUBTITLE_FONTS[language],
      fontSize: size,
      outline: 1,
      shadow: 0,
      marginV: MARGIN_V,
      marginL: MARGIN_SIDE,
      marginR: MARGIN_SIDE,
    },
    rules: { ...base, maxLineChars },
  };
}

"""Image validation and normalisation: real crafted files for every rejection, canonical PNGs."""
from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image, ImageCms

from curation.errors import CurationError
from curation.images import ImageRejected, normalise_image


def encode(image: Image.Image, format: str = "PNG", **params) -> bytes:
    out = io.BytesIO()
    image.save(out, format=format, **params)
    return out.getvalue()


def noise(size: tuple[int, int] = (64, 64), mode: str = "RGB", seed: int = 0) -> Image.Image:
    channels = len(Image.new(mode, (1, 1)).getbands())
    pixels = np.random.default_rng(seed).integers(0, 256, size=(size[1], size[0], channels), dtype=np.uint8)
    return Image.fromarray(pixels.squeeze(), mode=mode)


def decoded(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    image.load()
    return image


def chunk_types(png: bytes) -> list[bytes]:
    types, offset = [], 8
    while offset < len(png):
        (length,) = struct.unpack(">I", png[offset:offset + 4])
        types.append(png[offset + 4:offset + 8])
        offset += 12 + length
    return types


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def linear_gamma_rgb_profile() -> bytes:
    """A real ICC v2 display profile: sRGB primaries with a linear (gamma 1.0) curve.

    A pixel tagged with it must come out much lighter in sRGB: linear 0.5 is sRGB ~188.
    """
    def s15(value: float) -> bytes:
        return struct.pack(">i", round(value * 65536))

    def xyz(x: float, y: float, z: float) -> bytes:
        return b"XYZ " + b"\0" * 4 + s15(x) + s15(y) + s15(z)

    description = b"linear sRGB\0"
    tags = [
        (b"desc", b"desc" + b"\0" * 4 + struct.pack(">I", len(description)) + description
         + b"\0" * 8 + b"\0" * 3 + b"\0" * 67),
        (b"cprt", b"text" + b"\0" * 4 + b"none\0"),
        (b"wtpt", xyz(0.9642, 1.0, 0.8249)),
        (b"rXYZ", xyz(0.4361, 0.2225, 0.0139)),
        (b"gXYZ", xyz(0.3851, 0.7169, 0.0971)),
        (b"bXYZ", xyz(0.1431, 0.0606, 0.7141)),
    ]
    linear_curve = b"curv" + b"\0" * 4 + struct.pack(">I", 1) + struct.pack(">H", 0x0100) + b"\0\0"
    tags += [(b"rTRC", linear_curve), (b"gTRC", linear_curve), (b"bTRC", linear_curve)]

    table_size = 4 + 12 * len(tags)
    offset = 128 + table_size
    table, data = b"", b""
    for signature, body in tags:
        body += b"\0" * (-len(body) % 4)
        table += signature + struct.pack(">II", offset + len(data), len(body))
        data += body
    size = 128 + table_size + len(data)
    header = (
        struct.pack(">I", size) + b"\0" * 4 + struct.pack(">I", 0x02100000) + b"mntrRGB XYZ "
        + b"\0" * 12 + b"acsp" + b"\0" * 24 + struct.pack(">I", 0)
        + s15(0.9642) + s15(1.0) + s15(0.8249) + b"\0" * 4 + b"\0" * 44
    )
    assert len(header) == 128
    return header + struct.pack(">I", len(tags)) + table + data


# --- Rejections -----------------------------------------------------------------------------

def test_a_rejection_is_a_curation_error_with_a_stable_code_and_the_file_name():
    with pytest.raises(CurationError) as caught:
        normalise_image(b"hello, this is a shopping list", name="rose.png")
    assert caught.value.code == "not_an_image"
    assert "rose.png" in caught.value.message


def test_it_rejects_a_text_file_renamed_png():
    with pytest.raises(ImageRejected) as caught:
        normalise_image(b"peach hibiscus, loose wash\n" * 20, name="notes.png")
    assert caught.value.code == "not_an_image"


def test_it_rejects_an_empty_file():
    with pytest.raises(ImageRejected) as caught:
        normalise_image(b"", name="empty.png")
    assert caught.value.code == "not_an_image"


def test_it_rejects_a_format_outside_the_allowed_few():
    with pytest.raises(ImageRejected) as caught:
        normalise_image(encode(noise(), "PPM"), name="scan.ppm")
    assert caught.value.code == "not_an_image"


def test_it_rejects_a_truncated_png():
    png = encode(noise((128, 128)))
    with pytest.raises(ImageRejected) as caught:
        normalise_image(png[: len(png) // 2], name="half.png")
    assert caught.value.code == "truncated"
    assert "half.png" in caught.value.message


def test_it_rejects_a_truncated_jpeg():
    jpeg = encode(noise((256, 256)), "JPEG", quality=90)
    with pytest.raises(ImageRejected) as caught:
        normalise_image(jpeg[: len(jpeg) * 6 // 10], name="cut.jpg")
    assert caught.value.code == "truncated"


def test_it_rejects_a_png_whose_header_claims_thirty_thousand_pixels_square_before_decoding():
    header = png_chunk(b"IHDR", struct.pack(">IIBBBBB", 30_000, 30_000, 8, 2, 0, 0, 0))
    bomb = b"\x89PNG\r\n\x1a\n" + header + png_chunk(b"IDAT", zlib.compress(b"\0" * 1000)) + png_chunk(b"IEND", b"")
    with pytest.raises(ImageRejected) as caught:
        normalise_image(bomb, name="bomb.png")
    assert caught.value.code == "decompression_bomb"


def test_it_rejects_a_highly_compressible_huge_image_under_pillows_own_limit():
    flat = encode(Image.new("RGB", (5000, 5000), (250, 247, 240)), compress_level=9)
    assert len(flat) < 200_000  # 25 MP in a few dozen KB
    max_pixels_before = Image.MAX_IMAGE_PIXELS
    with pytest.raises(ImageRejected) as caught:
        normalise_image(flat, name="flat.png")
    assert caught.value.code == "decompression_bomb"
    assert Image.MAX_IMAGE_PIXELS == max_pixels_before  # the limit is per call, not global


def test_it_rejects_more_pixels_than_the_limit_as_too_large():
    with pytest.raises(ImageRejected) as caught:
        normalise_image(encode(noise((100, 100))), name="big.png", max_pixels=64 * 64)
    assert caught.value.code == "too_large"
    assert "100×100" in caught.value.message


def test_it_rejects_more_bytes_than_the_limit_as_too_large():
    with pytest.raises(ImageRejected) as caught:
        normalise_image(encode(noise((64, 64))), name="heavy.png", max_bytes=1000)
    assert caught.value.code == "too_large"


def test_it_rejects_a_tiny_image():
    with pytest.raises(ImageRejected) as caught:
        normalise_image(encode(noise((16, 40))), name="icon.png")
    assert caught.value.code == "too_small"
    assert "16×40" in caught.value.message


def test_it_rejects_a_float_image_whose_colours_are_undefined():
    with pytest.raises(ImageRejected) as caught:
        normalise_image(encode(Image.new("F", (40, 40), 0.5), "TIFF"), name="depth.tif")
    assert caught.value.code == "unsupported_mode"


def test_it_rejects_an_animated_gif():
    frames = [Image.new("RGB", (40, 40), colour) for colour in ((200, 30, 60), (30, 60, 200))]
    gif = encode(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100)
    with pytest.raises(ImageRejected) as caught:
        normalise_image(gif, name="spin.gif")
    assert caught.value.code == "animated"


# --- Normalisation --------------------------------------------------------------------------

def test_the_result_is_an_rgb_png_with_no_metadata_chunks():
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "painted by a secret model")
    source = encode(noise(mode="RGB"), pnginfo=info, dpi=(300, 300),
                    icc_profile=ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes())
    result = normalise_image(source, name="meta.png")
    assert set(chunk_types(result.png)) == {b"IHDR", b"IDAT", b"IEND"}
    assert decoded(result.png).mode == "RGB"
    assert result.original_format == "PNG"


def test_a_cmyk_jpeg_becomes_rgb():
    jpeg = encode(Image.new("CMYK", (48, 48), (0, 255, 255, 0)), "JPEG", quality=95)
    result = normalise_image(jpeg, name="print.jpg")
    image = decoded(result.png)
    assert image.mode == "RGB" and result.original_format == "JPEG"
    red, green, blue = image.getpixel((24, 24))
    assert red > 230 and green < 25 and blue < 25


def test_rgba_is_flattened_on_white():
    image = Image.new("RGBA", (40, 40), (255, 0, 0, 128))
    image.putpixel((0, 0), (0, 0, 0, 0))
    result = decoded(normalise_image(encode(image)).png)
    assert result.getpixel((0, 0)) == (255, 255, 255)
    red, green, blue = result.getpixel((10, 10))
    assert red == 255 and 125 <= green <= 129 and 125 <= blue <= 129


def test_a_palette_image_with_a_transparent_index_is_flattened_on_white():
    image = Image.new("P", (40, 40), 1)
    image.putpalette([0, 0, 0, 200, 30, 60] + [0] * 762)
    image.putpixel((5, 5), 0)
    result = decoded(normalise_image(encode(image, transparency=0)).png)
    assert result.getpixel((5, 5)) == (255, 255, 255)
    assert result.getpixel((20, 20)) == (200, 30, 60)


def test_grey_with_alpha_is_flattened_to_rgb():
    image = Image.new("LA", (40, 40), (0, 0))
    image.putpixel((1, 1), (90, 255))
    result = decoded(normalise_image(encode(image)).png)
    assert result.getpixel((0, 0)) == (255, 255, 255)
    assert result.getpixel((1, 1)) == (90, 90, 90)


def test_sixteen_bit_grey_is_scaled_not_clipped():
    image = Image.new("I;16", (40, 40), 128 * 257)
    assert decoded(encode(image)).mode == "I;16"
    result = decoded(normalise_image(encode(image), name="scan16.png").png)
    assert result.getpixel((3, 3)) == (128, 128, 128)


def test_an_embedded_non_srgb_profile_is_converted_to_srgb():
    tagged = encode(Image.new("RGB", (40, 40), (128, 128, 128)), icc_profile=linear_gamma_rgb_profile())
    untagged = encode(Image.new("RGB", (40, 40), (128, 128, 128)))
    assert decoded(normalise_image(untagged).png).getpixel((0, 0)) == (128, 128, 128)
    red, green, blue = decoded(normalise_image(tagged, name="linear.png").png).getpixel((0, 0))
    assert all(abs(channel - 188) <= 3 for channel in (red, green, blue))


def test_a_broken_embedded_profile_is_ignored_rather_than_refusing_the_image():
    png = encode(Image.new("RGB", (40, 40), (10, 120, 200)), icc_profile=b"not a profile at all" * 8)
    assert decoded(normalise_image(png).png).getpixel((0, 0)) == (10, 120, 200)


def test_exif_orientation_is_applied():
    image = Image.new("RGB", (64, 40), (255, 255, 255))
    image.putpixel((0, 0), (255, 0, 0))
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways: rotate 90° clockwise to display
    result = normalise_image(encode(image, exif=exif.tobytes()), name="phone.png")
    assert (result.width, result.height) == (40, 64)
    assert decoded(result.png).getpixel((39, 0)) == (255, 0, 0)


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(lambda: encode(noise(), "JPEG", quality=85), id="jpeg"),
        pytest.param(lambda: encode(noise(mode="RGBA")), id="rgba-png"),
        pytest.param(lambda: encode(noise(mode="L"), "WEBP", lossless=True), id="grey-webp"),
        pytest.param(lambda: encode(noise(mode="RGB"), "BMP"), id="bmp"),
        pytest.param(lambda: encode(noise(mode="RGB"), "TIFF", compression="tiff_lzw"), id="tiff"),
        pytest.param(lambda: encode(Image.new("RGB", (40, 40), (128, 128, 128)),
                                    icc_profile=linear_gamma_rgb_profile()), id="icc-png"),
    ],
)
def test_normalising_a_normalised_png_returns_the_same_bytes(source):
    once = normalise_image(source())
    twice = normalise_image(once.png)
    assert twice.png == once.png
    assert (twice.width, twice.height) == (once.width, once.height)
    assert twice.original_format == "PNG"


def test_the_same_pixels_in_different_files_normalise_to_the_same_bytes():
    pixels = noise((50, 50))
    fast = encode(pixels, compress_level=1)
    small = encode(pixels, compress_level=9, optimize=True)
    assert fast != small
    assert normalise_image(fast).png == normalise_image(small).png

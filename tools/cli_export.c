/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tensor-trainer export: a bundle as a linkable blob, a header and
 * either an assembler file that pulls the bundle in with .incbin (--format
 * asm) or a C array (--format c).
 */
#include "cli.h"
#include "tt_bundle.h"
#include "atomic_file.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool
cli_identifier (const char *s)
{
  if (!s || !(isalpha ((unsigned char) s[0]) || s[0] == '_') ||
      strlen (s) > 200)
    return false;
  for (const char *p = s; *p; p++)
    if (!isalnum ((unsigned char) *p) && *p != '_')
      return false;
  return true;
}

static bool
cli_section_ok (const char *s)
{
  if (!s || !*s || strlen (s) > 200)
    return false;
  for (const char *p = s; *p; p++)
    if (!isalnum ((unsigned char) *p) && !strchr ("._$-", *p))
      return false;
  return true;
}

/* MODEL.ttb -> MODEL, made a C identifier */
static void
cli_default_symbol (const char *path, char *out, size_t cap)
{
  char copy[PATH_MAX];
  snprintf (copy, sizeof copy, "%s", path);
  char *base = basename (copy);
  char *dot = strrchr (base, '.');
  if (dot && dot != base)
    *dot = '\0';
  size_t k = 0;
  if (isdigit ((unsigned char) base[0]))
    k = (size_t) snprintf (out, cap, "bundle_");
  for (const char *p = base; *p && k + 1 < cap && k < 200; p++)
    out[k++] = isalnum ((unsigned char) *p) ? *p : '_';
  out[k] = '\0';
  if (!k)
    snprintf (out, cap, "bundle");
}

static int
cli_write_text (const char *path, const char *text, size_t len)
{
  tt_atomic_file f;
  tt_error err;
  if (tt_atomic_file_open (&f, path, &err))
    return cli_fail ("%s", err.message);
  if (tt_atomic_file_write (&f, text, len, &err)) {
    tt_atomic_file_abort (&f);
    return cli_fail ("%s", err.message);
  }
  if (tt_atomic_file_commit (&f, &err))
    return cli_fail ("%s", err.message);
  return 0;
}

/* dst becomes a copy of src: a hard link when the file system allows (a
 * snapshot at no cost: bundles are only ever replaced, never rewritten),
 * else an in-kernel copy, else read and write; atomic either way. */
static int
cli_copy_file (const char *src, const char *dst)
{
  char rs[PATH_MAX], rd[PATH_MAX];
  if (realpath (src, rs) && realpath (dst, rd) && !strcmp (rs, rd))
    return 0;
  char tmp[PATH_MAX + 400];
  if (snprintf (tmp, sizeof tmp, "%s.tmp-link-%ld", dst, (long) getpid ())
      >= (int) sizeof tmp)
    return cli_fail ("%s: path too long", dst);
  unlink (tmp);
  if (link (src, tmp) == 0) {
    int rc = rename (tmp, dst);
    unlink (tmp);               /* left over when dst was already src */
    if (rc == 0)
      return 0;
  }
  int in = open (src, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return cli_fail ("%s: cannot open: %s", src, strerror (errno));
  tt_atomic_file f;
  tt_error err;
  if (tt_atomic_file_open (&f, dst, &err)) {
    close (in);
    return cli_fail ("%s", err.message);
  }
  bool fallback = false;
  for (;;) {
    ssize_t n = copy_file_range (in, NULL, f.fd, NULL, 1u << 30, 0);
    if (n == 0)
      break;
    if (n < 0) {
      fallback = true;
      break;
    }
  }
  if (fallback) {
    static char buf[1 << 20];
    if (lseek (in, 0, SEEK_SET) != 0 || ftruncate (f.fd, 0) != 0 ||
        lseek (f.fd, 0, SEEK_SET) != 0) {
      close (in);
      tt_atomic_file_abort (&f);
      return cli_fail ("%s: cannot copy to %s: %s", src, dst, strerror (errno));
    }
    ssize_t n;
    while ((n = read (in, buf, sizeof buf)) > 0)
      if (tt_atomic_file_write (&f, buf, (size_t) n, &err)) {
        close (in);
        tt_atomic_file_abort (&f);
        return cli_fail ("%s", err.message);
      }
    if (n < 0) {
      close (in);
      tt_atomic_file_abort (&f);
      return cli_fail ("%s: read failed: %s", src, strerror (errno));
    }
  }
  close (in);
  if (tt_atomic_file_commit (&f, &err))
    return cli_fail ("%s", err.message);
  return 0;
}

/* The bundle as a C array: decimal bytes, 24 to a line. */
static int
cli_write_c_array (const char *src, uint64_t size, tt_atomic_file * f)
{
  static char digits[256][5];
  static unsigned char lens[256];
  for (int v = 0; v < 256; v++)
    lens[v] = (unsigned char) snprintf (digits[v], sizeof digits[v], "%d,", v);
  FILE *in = fopen (src, "rb");
  if (!in)
    return cli_fail ("%s: cannot open: %s", src, strerror (errno));
  enum
  { CHUNK = 1 << 20 };
  unsigned char *bytes = malloc (CHUNK);
  char *text = malloc ((size_t) CHUNK * 4 + CHUNK / 24 + 16);
  tt_error err;
  int rc = 0;
  uint64_t done = 0;
  size_t n;
  while (bytes && text && (n = fread (bytes, 1, CHUNK, in)) > 0) {
    char *t = text;
    for (size_t i = 0; i < n; i++) {
      memcpy (t, digits[bytes[i]], 4);
      t += lens[bytes[i]];
      if ((done + i) % 24 == 23)
        *t++ = '\n';
    }
    done += n;
    if (tt_atomic_file_write (f, text, (size_t) (t - text), &err)) {
      rc = cli_fail ("%s", err.message);
      break;
    }
  }
  if (!bytes || !text)
    rc = cli_fail ("out of memory");
  else if (!rc && (ferror (in) || done != size))
    rc = cli_fail ("%s: read failed or the file changed", src);
  fclose (in);
  free (bytes);
  free (text);
  return rc;
}

int
cli_export (const cli_options * o)
{
  if (!o->c_out)
    return cli_fail ("export needs --c-out DIR");
  const char *format = o->format ? o->format : "asm";
  if (strcmp (format, "asm") && strcmp (format, "c"))
    return cli_fail ("--format is asm or c, not '%s'", format);
  char sym[256];
  if (o->symbol)
    snprintf (sym, sizeof sym, "%s", o->symbol);
  else
    cli_default_symbol (o->model, sym, sizeof sym);
  if (!cli_identifier (sym))
    return cli_fail ("--symbol '%s' is not a C identifier (letters, digits "
        "and _, at most 200)", sym);
  char section[256];
  if (o->section)
    snprintf (section, sizeof section, "%s", o->section);
  else
    snprintf (section, sizeof section, ".rodata.%s", sym);
  if (!cli_section_ok (section))
    return cli_fail ("--section '%s': use letters, digits and . _ $ - (at "
        "most 200)", section);

  /* a damaged bundle is not worth embedding */
  const double t0 = cli_now ();
  tt_bundle_info info;
  tt_error err;
  if (tt_bundle_inspect (o->model, &info, &err))
    return cli_fail ("%s", err.message);
  const uint64_t size = info.file_size;
  const uint32_t bundle_align = info.alignment;
  const bool ok = info.checksums_ok;
  tt_bundle_info_clear (&info);
  if (!ok)
    return cli_fail ("%s: a section's checksum does not match: not "
        "exported (see tensor-trainer inspect)", o->model);
  const uint64_t align = o->align ? o->align : bundle_align > 64 ?
      bundle_align : 64;
  if (align & (align - 1) || align > TT_BUNDLE_MAX_ALIGNMENT)
    return cli_fail ("--align %" PRIu64 " is not a power of two in [1, %d]",
        align, TT_BUNDLE_MAX_ALIGNMENT);
  const uint64_t in_place = bundle_align < 64 ? bundle_align : 64;
  if (align < in_place)
    fprintf (stderr, "tensor-trainer: note: --align %" PRIu64 " is below "
        "the %" PRIu64 " bytes using the weights in place needs; copy modes "
        "still work\n", align, in_place);

  if (mkdir (o->c_out, 0777) != 0 && errno != EEXIST)
    return cli_fail ("%s: cannot create: %s", o->c_out, strerror (errno));
  char dir[PATH_MAX];
  if (!realpath (o->c_out, dir))
    return cli_fail ("%s: %s", o->c_out, strerror (errno));
  char upper[256];
  size_t k;
  for (k = 0; sym[k]; k++)
    upper[k] = (char) toupper ((unsigned char) sym[k]);
  upper[k] = '\0';
  char path[PATH_MAX + 300];

  /* the header */
  char *text = NULL;
  size_t len = 0;
  FILE *t = open_memstream (&text, &len);
  if (!t)
    return cli_fail ("out of memory");
  fprintf (t, "/* Generated by tensor-trainer export from %s: do not edit.\n"
      " *\n"
      " * %s is the bundle (%" PRIu64 " bytes), aligned to %" PRIu64
      " bytes in section %s.\n"
      " * Open it without a file system:\n"
      " *   tt_bundle_load_options opt = { .mode = TT_BUNDLE_IN_PLACE };\n"
      " *   tt_model *m = tt_bundle_load_memory (%s, %s_size, \"%s\", &opt,"
      " &err);\n"
      " * TT_BUNDLE_IN_PLACE evaluates with the weights where they lie "
      "(read-only);\n"
      " * TT_BUNDLE_READ copies them into the pool (training allowed). */\n"
      "#ifndef TT_EXPORT_%s_H\n#define TT_EXPORT_%s_H\n\n"
      "#include <stddef.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
      "#define %s_SIZE ((size_t) %" PRIu64 "u)\n#define %s_ALIGNMENT %"
      PRIu64 "\n\nextern const unsigned char %s[];\n"
      "extern const size_t %s_size;\n\n#ifdef __cplusplus\n}\n#endif\n"
      "#endif\n", o->model, sym, size, align, section, sym, sym, sym, upper,
      upper, upper, size, upper, align, sym, sym);
  fclose (t);
  snprintf (path, sizeof path, "%s/%s.h", dir, sym);
  int rc = text ? cli_write_text (path, text, len) : cli_fail ("out of "
      "memory");
  free (text);
  if (rc)
    return rc;

  if (!strcmp (format, "asm")) {
    char blob[PATH_MAX + 300];
    snprintf (blob, sizeof blob, "%s/%s.ttb", dir, sym);
    if (strpbrk (blob, "\"\\\n"))
      return cli_fail ("%s: a path with quotes, backslashes or newlines "
          "cannot go into .incbin; use --format c", blob);
    if (cli_copy_file (o->model, blob))
      return 1;
    text = NULL;
    t = open_memstream (&text, &len);
    if (!t)
      return cli_fail ("out of memory");
    fprintf (t, "/* Generated by tensor-trainer export from %s: do not "
        "edit.\n"
        " * .incbin pulls the bundle in as it is, so this file assembles in "
        "the\n"
        " * same time whatever the model's size. GNU assembler syntax, ELF "
        "targets\n"
        " * (gcc -c %s.S, clang -c %s.S); elsewhere export with --format c.\n"
        " * The bundle is read from %s_PATH: define it to move the file,\n"
        " * e.g. -D%s_PATH='\"some/dir/%s.ttb\"'. */\n"
        "#ifndef %s_PATH\n#define %s_PATH \"%s\"\n#endif\n"
        "#ifndef __ELF__\n#error \"%s.S is for ELF targets: export with "
        "--format c\"\n#endif\n\n"
        "\t.section %s,\"a\",%%progbits\n\t.balign %" PRIu64 "\n"
        "\t.globl %s\n\t.type %s, %%object\n%s:\n\t.incbin %s_PATH\n"
        ".L%s_end:\n\t.size %s, .L%s_end - %s\n\n"
        "\t.section .rodata\n\t.balign 8\n\t.globl %s_size\n"
        "\t.type %s_size, %%object\n\t.size %s_size, __SIZEOF_SIZE_T__\n"
        "%s_size:\n#if __SIZEOF_SIZE_T__ == 8\n\t.quad .L%s_end - %s\n"
        "#else\n\t.long .L%s_end - %s\n#endif\n\n"
        "\t.section .note.GNU-stack,\"\",%%progbits\n", o->model, sym, sym,
        upper, upper, sym, upper, upper, blob, sym, section, align, sym, sym,
        sym, upper, sym, sym, sym, sym, sym, sym, sym, sym, sym, sym, sym, sym);
    fclose (t);
    snprintf (path, sizeof path, "%s/%s.S", dir, sym);
    rc = text ? cli_write_text (path, text, len) : cli_fail ("out of "
        "memory");
    free (text);
  } else {
    snprintf (path, sizeof path, "%s/%s.c", dir, sym);
    tt_atomic_file f;
    if (tt_atomic_file_open (&f, path, &err))
      return cli_fail ("%s", err.message);
    char head[2048];
    int n = snprintf (head, sizeof head, "/* Generated by tensor-trainer "
        "export from %s: do not edit.\n"
        " * The portable route: a C array of the bundle's %" PRIu64
        " bytes. Large\n"
        " * models compile slowly this way; the .incbin route (--format asm)"
        " does not. */\n"
        "#include \"%s.h\"\n\n"
        "#if defined(__GNUC__) || defined(__clang__)\n"
        "__attribute__ ((section (\"%s\"), aligned (%" PRIu64 ")))\n"
        "#else\n_Alignas (%" PRIu64 ")      /* section: GNU C only */\n"
        "#endif\nconst unsigned char %s[%" PRIu64 "] = {\n", o->model, size,
        sym, section, align, align, sym, size);
    rc = tt_atomic_file_write (&f, head, (size_t) n, &err) ?
        cli_fail ("%s", err.message) : cli_write_c_array (o->model, size, &f);
    if (!rc) {
      n = snprintf (head, sizeof head, "};\n\nconst size_t %s_size = %"
          PRIu64 "u;\n", sym, size);
      if (tt_atomic_file_write (&f, head, (size_t) n, &err))
        rc = cli_fail ("%s", err.message);
    }
    if (rc)
      tt_atomic_file_abort (&f);
    else if (tt_atomic_file_commit (&f, &err))
      rc = cli_fail ("%s", err.message);
  }
  if (!rc)
    printf ("exported %s (%" PRIu64 " bytes) -> %s/%s.h + %s/%s.%s symbol=%s "
        "section=%s align=%" PRIu64 " seconds=%.3f\n", o->model, size, dir,
        sym, dir, sym, strcmp (format, "asm") ? "c" : "S", sym, section,
        align, cli_now () - t0);
  return rc;
}

/* test_jsonw: the JSON string writer (jsonw/jsonw.h): every escape, the HTML-safe flag,
 * NULL, output cut to the buffer as snprintf cuts, and the file form; cJSON reads back
 * what it writes. Not for: the JSON each caller lays out (test_report, test_train, ...). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw/jsonw.h"
#include "tinytest.h"

static const char nasty[] = "a\"b\\c\b\f\n\r\t\x01\x1f</script>&\x7f\xc3\xa9";

TEST(escapes_as_rfc_8259_says)
{
    char out[256];
    size_t n = jsonw_quote(out, sizeof out, nasty, 0);
    CHECK_STR(out, "\"a\\\"b\\\\c\\b\\f\\n\\r\\t\\u0001\\u001f</script>&\x7f\xc3\xa9\"");
    CHECK_EQ_INT((long long)n, (long long)strlen(out));
    cJSON *j = cJSON_Parse(out);
    CHECK(j && cJSON_IsString(j) && strcmp(j->valuestring, nasty) == 0);
    cJSON_Delete(j);
}

TEST(html_flag_hides_markup)
{
    char out[256];
    jsonw_quote(out, sizeof out, "</script><!--&\x7f", JSONW_HTML);
    CHECK_STR(out, "\"\\u003c/script\\u003e\\u003c!--\\u0026\\u007f\"");
    CHECK(strchr(out, '<') == NULL && strchr(out, '>') == NULL && strchr(out, '&') == NULL);
    cJSON *j = cJSON_Parse(out);
    CHECK(j && cJSON_IsString(j) && strcmp(j->valuestring, "</script><!--&\x7f") == 0);
    cJSON_Delete(j);
}

TEST(null_is_null)
{
    char out[16];
    CHECK_EQ_INT((long long)jsonw_quote(out, sizeof out, NULL, 0), 4);
    CHECK_STR(out, "null");
    CHECK_EQ_INT((long long)jsonw_quote(out, sizeof out, "", 0), 2);
    CHECK_STR(out, "\"\"");
}

TEST(cut_like_snprintf_never_inside_an_escape)
{
    char out[5];
    /* "\"ab\\n\"" needs 6 bytes and a NUL: with 5, cut before the escape, which does not
     * fit whole. */
    size_t n = jsonw_quote(out, sizeof out, "ab\n", 0);
    CHECK_EQ_INT((long long)n, 6);
    CHECK_STR(out, "\"ab");
    CHECK_EQ_INT((long long)jsonw_quote(NULL, 0, "ab\n", 0), 6);
    char one[1] = {'x'};
    jsonw_quote(one, 1, "ab", 0);
    CHECK_EQ_INT(one[0], 0);
}

TEST(file_form_writes_the_same)
{
    char out[256], *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    jsonw_fquote(f, nasty, JSONW_HTML);
    fputc(' ', f);
    jsonw_fquote(f, NULL, 0);
    fclose(f);
    jsonw_quote(out, sizeof out, nasty, JSONW_HTML);
    strcat(out, " null");
    CHECK_STR(buf, out);
    free(buf);
}

TT_MAIN

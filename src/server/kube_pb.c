/*
 * kube_pb.c: the few Kubernetes objects kubectl sends as Protocol Buffers
 * (Content-Type application/vnd.kubernetes.protobuf), read into the JSON
 * shape the rest of the face speaks. kubectl's typed commands (`kubectl
 * create secret generic`, `create configmap`) send them so; everything
 * else it sends as JSON.
 *
 * The body is Kubernetes' envelope: the 4 bytes "k8s\0", then a
 * runtime.Unknown message {typeMeta (1): {apiVersion (1), kind (2)}, raw
 * (2): the object, contentEncoding (3), contentType (4)}. Read here: v1
 * Secret {metadata (1), data (2, map string->bytes), type (3), stringData
 * (4, map string->string), immutable (5)} and v1 ConfigMap {metadata (1),
 * data (2, map string->string), binaryData (3, map string->bytes),
 * immutable (4)}, with ObjectMeta's name (1), generateName (2), namespace
 * (3), resourceVersion (6), labels (11) and annotations (12). Other fields
 * are skipped, as protobuf readers do. A map entry is a message {key (1),
 * value (2)}. Bytes values become base64 strings, as in JSON.
 */
#include "kube_int.h"

#include <string.h>

/* One buffer being read. */
struct pb {
	const unsigned char *p, *end;
	bool bad;
};

static uint64_t varint(struct pb *b)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		if (b->p >= b->end) {
			b->bad = true;
			return 0;
		}
		v |= (uint64_t)(*b->p & 0x7f) << shift;
		if (!(*b->p++ & 0x80))
			return v;
	}
	b->bad = true;
	return 0;
}

/* The next field: its number and wire type; false at the end or when bad. */
static bool field(struct pb *b, uint32_t *num, int *wt)
{
	uint64_t tag;

	if (b->bad || b->p >= b->end)
		return false;
	tag = varint(b);
	*num = (uint32_t)(tag >> 3);
	*wt = (int)(tag & 7);
	return !b->bad;
}

/* A length-delimited value as a sub-buffer. */
static struct pb bytes(struct pb *b)
{
	uint64_t n = varint(b);
	struct pb s = { b->p, b->p, false };

	if (b->bad || n > (uint64_t)(b->end - b->p)) {
		b->bad = true;
		s.bad = true;
		return s;
	}
	s.end = b->p + n;
	b->p += n;
	return s;
}

static void skip(struct pb *b, int wt)
{
	switch (wt) {
	case 0: varint(b); break;
	case 1: if (b->end - b->p < 8) b->bad = true; else b->p += 8; break;
	case 2: bytes(b); break;
	case 5: if (b->end - b->p < 4) b->bad = true; else b->p += 4; break;
	default: b->bad = true;
	}
}

static json_t *str(struct pb s)
{
	return json_stringn_nocheck((const char *)s.p, (size_t)(s.end - s.p));
}

/* A map entry {key, value} into m; value as base64 when b64. */
static void map_entry(struct pb *b, json_t *m, bool b64)
{
	struct pb e = bytes(b), k = { 0 }, v = { 0 };
	uint32_t num;
	int wt;
	bool hk = false;

	while (field(&e, &num, &wt)) {
		if (num == 1 && wt == 2) {
			k = bytes(&e);
			hk = true;
		} else if (num == 2 && wt == 2) {
			v = bytes(&e);
		} else {
			skip(&e, wt);
		}
	}
	if (e.bad || !hk) {
		b->bad = true;
		return;
	}
	{
		char *key = drv_strndup((const char *)k.p, (size_t)(k.end - k.p));

		if (b64) {
			char *enc = drv_base64_encode(v.p ? v.p : (const unsigned char *)"",
						      (size_t)(v.end - v.p));

			json_object_set_new(m, key, json_string(enc));
			drv_free(enc);
		} else {
			json_object_set_new(m, key, v.p ? str(v) : json_string(""));
		}
		drv_free(key);
	}
}

static json_t *map_of(json_t *obj, const char *key)
{
	json_t *m = json_object_get(obj, key);

	if (!m) {
		m = json_object();
		json_object_set_new(obj, key, m);
	}
	return m;
}

static void meta(struct pb *b, json_t *obj)
{
	struct pb m = bytes(b);
	json_t *md = map_of(obj, "metadata");
	uint32_t num;
	int wt;

	while (field(&m, &num, &wt)) {
		static const char *const names[] = { NULL, "name", "generateName", "namespace",
						      NULL, NULL, "resourceVersion" };

		if (wt == 2 && num < DRV_ARRAY_SIZE(names) && names[num])
			json_object_set_new(md, names[num], str(bytes(&m)));
		else if (wt == 2 && num == 11)
			map_entry(&m, map_of(md, "labels"), false);
		else if (wt == 2 && num == 12)
			map_entry(&m, map_of(md, "annotations"), false);
		else
			skip(&m, wt);
	}
	if (m.bad)
		b->bad = true;
}

/* The object in raw, of kind "Secret" or "ConfigMap". */
static json_t *object(struct pb raw, const char *kind)
{
	bool secret = strcmp(kind, "Secret") == 0;
	json_t *obj = json_pack("{s:s,s:s}", "apiVersion", "v1", "kind", kind);
	uint32_t num;
	int wt;

	while (field(&raw, &num, &wt)) {
		if (num == 1 && wt == 2)
			meta(&raw, obj);
		else if (num == 2 && wt == 2)
			map_entry(&raw, map_of(obj, "data"), secret);
		else if (secret && num == 3 && wt == 2)
			json_object_set_new(obj, "type", str(bytes(&raw)));
		else if (secret && num == 4 && wt == 2)
			map_entry(&raw, map_of(obj, "stringData"), false);
		else if (!secret && num == 3 && wt == 2)
			map_entry(&raw, map_of(obj, "binaryData"), true);
		else if (num == (secret ? 5u : 4u) && wt == 0)
			json_object_set_new(obj, "immutable", json_boolean(varint(&raw) != 0));
		else
			skip(&raw, wt);
	}
	if (raw.bad) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

json_t *kube_pb_object(const void *buf, size_t len, char *err, size_t errsz)
{
	struct pb b = { buf, (const unsigned char *)buf + len, false }, raw = { 0 };
	char av[64] = "", kind[64] = "";
	uint32_t num;
	int wt;

	if (len < 4 || memcmp(buf, "k8s\0", 4) != 0) {
		snprintf(err, errsz, "not a Kubernetes protobuf body (no \"k8s\\0\" prefix)");
		return NULL;
	}
	b.p += 4;
	while (field(&b, &num, &wt)) {
		if (num == 1 && wt == 2) {
			struct pb tm = bytes(&b);
			uint32_t n2;
			int w2;

			while (field(&tm, &n2, &w2)) {
				if (w2 == 2 && (n2 == 1 || n2 == 2)) {
					struct pb v = bytes(&tm);

					snprintf(n2 == 1 ? av : kind, 64, "%.*s",
						 (int)DRV_MIN(63, v.end - v.p), (const char *)v.p);
				} else {
					skip(&tm, w2);
				}
			}
			b.bad |= tm.bad;
		} else if (num == 2 && wt == 2) {
			raw = bytes(&b);
		} else {
			skip(&b, wt);
		}
	}
	if (b.bad || !raw.p) {
		snprintf(err, errsz, "a protobuf body drover cannot read (runtime.Unknown expected)");
		return NULL;
	}
	if (strcmp(av, "v1") != 0 || (strcmp(kind, "Secret") != 0 && strcmp(kind, "ConfigMap") != 0)) {
		snprintf(err, errsz, "a protobuf %s %s: drover reads protobuf only for v1 Secret and "
			 "ConfigMap; send JSON", av, kind);
		return NULL;
	}
	{
		json_t *o = object(raw, kind);

		if (!o)
			snprintf(err, errsz, "a protobuf %s drover cannot read", kind);
		return o;
	}
}

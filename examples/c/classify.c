/*
 * Classifies images with libnvdla: compiles an ONNX model (or loads a loadable), opens a
 * session on a device and runs it once per image, printing the top-1 class.
 *
 *   classify [--device D] [--config C] [--normalize N] (--onnx MODEL | --loadable FILE)
 *            IMAGE...
 *
 * --device     "vp" (the built-in virtual platform, default), "linux" (the kernel
 *              driver) or "socket:PATH"
 * --config     hardware build of the virtual platform and of the compiled model
 *              (default nv_full)
 * --normalize  the network's input is pixel / N (default 1)
 * --onnx       compile this model in fp16 with nvdla_compile_onnx first
 *
 * Build: cc classify.c $(pkg-config --cflags --libs nvdla) -o classify
 * Output: one line per image, "IMAGE: class K (score S)"; exit 1 on any error.
 */
#include <nvdla.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what)
{
    fprintf(stderr, "classify: %s: %s\n", what, nvdla_last_error());
    return 1;
}

static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = n > 0 ? malloc((size_t)n) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

int main(int argc, char **argv)
{
    const char *device = "vp", *config = "nv_full", *onnx = NULL, *loadable = NULL;
    unsigned normalize = 1;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (i + 1 >= argc) {
            fprintf(stderr, "classify: %s needs a value\n", argv[i]);
            return 2;
        }
        if (!strcmp(argv[i], "--device"))
            device = argv[i + 1];
        else if (!strcmp(argv[i], "--config"))
            config = argv[i + 1];
        else if (!strcmp(argv[i], "--normalize"))
            normalize = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--onnx"))
            onnx = argv[i + 1];
        else if (!strcmp(argv[i], "--loadable"))
            loadable = argv[i + 1];
        else {
            fprintf(stderr, "classify: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if ((!onnx) == (!loadable) || i >= argc) {
        fprintf(stderr, "usage: classify [--device D] [--config C] [--normalize N] "
                        "(--onnx MODEL | --loadable FILE) IMAGE...\n");
        return 2;
    }

    nvdla_session *s = NULL;
    if (onnx) {
        size_t len = 0;
        unsigned char *model = read_file(onnx, &len);
        if (!model) {
            fprintf(stderr, "classify: cannot read %s\n", onnx);
            return 1;
        }
        nvdla_compile_options opts;
        nvdla_compile_options_init(&opts);
        opts.config = config;
        nvdla_buffer out = {0};
        nvdla_status st = nvdla_compile_onnx(model, len, &opts, &out);
        free(model);
        if (st != NVDLA_STATUS_OK)
            return fail("compile");
        printf("compiled %s for %s: %zu bytes of loadable\n", onnx, config, out.len);
        st = nvdla_session_open(device, config, out.data, out.len, &s);
        nvdla_buffer_free(&out);
        if (st != NVDLA_STATUS_OK)
            return fail("open");
    } else if (nvdla_session_open_file(device, config, loadable, &s) != NVDLA_STATUS_OK) {
        return fail(loadable);
    }

    nvdla_tensor_info in, out;
    if (nvdla_session_input_info(s, 0, &in) != NVDLA_STATUS_OK ||
        nvdla_session_output_info(s, 0, &out) != NVDLA_STATUS_OK)
        return fail("tensors");
    printf("input '%s' %ux%ux%ux%u, output '%s' %llu values\n", in.name, in.shape[0],
           in.shape[1], in.shape[2], in.shape[3], out.name, (unsigned long long)out.elements);
    float *scores = malloc(sizeof(float) * (size_t)out.elements);
    int status = 0;
    for (; i < argc; i++) {
        if (nvdla_session_set_input_image(s, 0, argv[i], normalize) != NVDLA_STATUS_OK ||
            nvdla_session_run(s) != NVDLA_STATUS_OK ||
            nvdla_session_get_output(s, 0, scores, (size_t)out.elements) != NVDLA_STATUS_OK) {
            status = fail(argv[i]);
            break;
        }
        size_t best = 0;
        for (size_t k = 1; k < (size_t)out.elements; k++)
            if (scores[k] > scores[best])
                best = k;
        printf("%s: class %zu (score %g, %.3f ms)\n", argv[i], best, scores[best],
               1e3 * nvdla_session_last_run_seconds(s));
    }
    free(scores);
    nvdla_session_free(s);
    return status;
}

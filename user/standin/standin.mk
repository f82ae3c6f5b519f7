# The CUDA stand-in libraries (see standin.h); included by the top-level
# Makefile.
#
# Input: STANDIN_DIR (output directory).
# Target: standin.

# Sources live next to this file, wherever it is included from.
STANDIN_SRC := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

STANDIN_CC := gcc
STANDIN_CFLAGS := -std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -pthread
# -z defs: a symbol missing from a library fails its build, not its load.
STANDIN_LD := -shared -Wl,-z,defs
# The runtime and NVML reach the shared state in the driver beside them;
# cuBLAS calls the driver's entry points; cuDNN asks it the multiprocessor
# count (dropout states).
STANDIN_DRIVER := -L$(STANDIN_DIR) -l:libcuda.so.1 -Wl,--enable-new-dtags \
		  -Wl,-rpath,'$$ORIGIN'

STANDIN_LIBS := $(addprefix $(STANDIN_DIR)/,libcuda.so.1 libcudart.so.12 \
		  libcublas.so.12 libcublasLt.so.12 libnvidia-ml.so.1 \
		  libcudnn.so.9)

.PHONY: standin
standin: $(STANDIN_LIBS)

# $(call standin_link,SONAME,SOURCE STEM,EXTRA FLAGS)
standin_link = $(STANDIN_CC) $(STANDIN_CFLAGS) $(STANDIN_LD) -Wl,-soname,$(1) \
		-Wl,--version-script,$(STANDIN_SRC)/$(2).map -o $@ \
		$(STANDIN_SRC)/$(2).c $(3)

$(STANDIN_DIR)/libcuda.so.1: $(addprefix $(STANDIN_SRC)/,driver.c driver.map standin.h)
	@mkdir -p $(@D)
	$(call standin_link,libcuda.so.1,driver)

$(STANDIN_DIR)/libcudart.so.12: $(addprefix $(STANDIN_SRC)/,cudart.c cudart.map standin.h) \
				$(STANDIN_DIR)/libcuda.so.1
	@mkdir -p $(@D)
	$(call standin_link,libcudart.so.12,cudart,$(STANDIN_DRIVER))

$(STANDIN_DIR)/libnvidia-ml.so.1: $(addprefix $(STANDIN_SRC)/,nvml.c nvml.map standin.h) \
				  $(STANDIN_DIR)/libcuda.so.1
	@mkdir -p $(@D)
	$(call standin_link,libnvidia-ml.so.1,nvml,$(STANDIN_DRIVER))

$(STANDIN_DIR)/libcublas.so.12: $(addprefix $(STANDIN_SRC)/,cublas.c cublas.map standin.h) \
				 $(STANDIN_DIR)/libcuda.so.1
	@mkdir -p $(@D)
	$(call standin_link,libcublas.so.12,cublas,$(STANDIN_DRIVER))

$(STANDIN_DIR)/libcublasLt.so.12: $(addprefix $(STANDIN_SRC)/,cublaslt.c cublaslt.map standin.h)
	@mkdir -p $(@D)
	$(call standin_link,libcublasLt.so.12,cublaslt)

$(STANDIN_DIR)/libcudnn.so.9: $(addprefix $(STANDIN_SRC)/,cudnn.c cudnn.map standin.h ../dryrun/cudnn_model.h) \
			       $(STANDIN_DIR)/libcuda.so.1
	@mkdir -p $(@D)
	$(call standin_link,libcudnn.so.9,cudnn,$(STANDIN_DRIVER))

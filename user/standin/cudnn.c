/*
 * cudnn.c - libcudnn.so.9 of the CUDA stand-in (see standin.h).
 *
 * libtorch_cuda and libtorch_python link cuDNN, so it must load for
 * "import torch", though the models the stand-in runs never call it.
 * Every symbol they import is here, in the version node "libcudnn.so.9":
 * the version queries answer 9.0.0 for CUDA 12.4, and everything else
 * fails with CUDNN_STATUS_NOT_SUPPORTED (3000 since cuDNN 9; it was 9),
 * which PyTorch reports as an error of the operation that needed cuDNN.
 */
#include <stdio.h>

#include "standin.h"

typedef int cudnnStatus_t;

#define CUDNN_STATUS_SUCCESS 0
#define CUDNN_STATUS_BAD_PARAM 2000
#define CUDNN_STATUS_NOT_SUPPORTED 3000

/* libraryPropertyType */
#define MAJOR_VERSION 0
#define MINOR_VERSION 1
#define PATCH_LEVEL 2

#define VERSION_MAJOR 9
#define VERSION_MINOR 0
#define VERSION_PATCH 0

MT_API size_t cudnnGetVersion(void)
{
	return VERSION_MAJOR * 10000 + VERSION_MINOR * 100 + VERSION_PATCH;
}

MT_API size_t cudnnGetCudartVersion(void)
{
	return MT_CUDA_VERSION;
}

MT_API cudnnStatus_t cudnnGetProperty(int type, int *value)
{
	if (!value)
		return CUDNN_STATUS_BAD_PARAM;
	if (type == MAJOR_VERSION)
		*value = VERSION_MAJOR;
	else if (type == MINOR_VERSION)
		*value = VERSION_MINOR;
	else if (type == PATCH_LEVEL)
		*value = VERSION_PATCH;
	else
		return CUDNN_STATUS_BAD_PARAM;
	return CUDNN_STATUS_SUCCESS;
}

MT_API const char *cudnnGetErrorString(cudnnStatus_t status)
{
	switch (status) {
	case CUDNN_STATUS_SUCCESS:
		return "CUDNN_STATUS_SUCCESS";
	case CUDNN_STATUS_BAD_PARAM:
		return "CUDNN_STATUS_BAD_PARAM";
	case CUDNN_STATUS_NOT_SUPPORTED:
		return "CUDNN_STATUS_NOT_SUPPORTED";
	default:
		return "CUDNN_UNKNOWN_STATUS_FOUND";
	}
}

MT_API void cudnnGetLastErrorString(char *message, size_t max_size)
{
	if (message && max_size)
		snprintf(message, max_size, "%s",
			 "cuDNN is not available on the " MT_DEVICE_NAME);
}

MT_STUB(cudnnStatus_t, cudnnBackendCreateDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnBackendDestroyDescriptor,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnBackendExecute, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnBackendFinalize, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnBackendGetAttribute, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnBackendSetAttribute, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnBatchNormalizationBackwardEx,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnBatchNormalizationForwardInference,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnBatchNormalizationForwardTrainingEx,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnCTCLoss, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnCTCLoss_v8, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnConvolutionBackwardData, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnConvolutionBackwardFilter,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnConvolutionBiasActivationForward,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnConvolutionForward, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnCreate, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnCreateActivationDescriptor,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnCreateCTCLossDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnCreateConvolutionDescriptor,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnCreateDropoutDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnCreateFilterDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnCreatePoolingDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnCreateRNNDataDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnCreateRNNDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnCreateSpatialTransformerDescriptor,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnCreateTensorDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnDestroyActivationDescriptor,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnDestroyCTCLossDescriptor,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnDestroyConvolutionDescriptor,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnDestroyDropoutDescriptor,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnDestroyFilterDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnDestroyRNNDataDescriptor,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnDestroyRNNDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnDestroySpatialTransformerDescriptor,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnDestroyTensorDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnDropoutGetStatesSize, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnFindConvolutionBackwardDataAlgorithmEx,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnFindConvolutionBackwardFilterAlgorithmEx,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnFindConvolutionForwardAlgorithmEx,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetBatchNormalizationBackwardExWorkspaceSize,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetBatchNormalizationTrainingExReserveSpaceSize,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetCTCLossWorkspaceSize, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetCTCLossWorkspaceSize_v8,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetConvolutionBackwardDataAlgorithm_v7,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetConvolutionBackwardDataWorkspaceSize,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetConvolutionBackwardFilterAlgorithm_v7,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetConvolutionBackwardFilterWorkspaceSize,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetConvolutionForwardAlgorithm_v7,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetConvolutionForwardWorkspaceSize,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetFilterNdDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetRNNTempSpaceSizes, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetRNNWeightParams, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetRNNWeightSpaceSize, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetStream, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnGetTensorNdDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnPoolingForward, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnRNNBackwardData_v8, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnRNNBackwardWeights_v8, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnRNNForward, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnRestoreDropoutDescriptor,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSetActivationDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSetCTCLossDescriptorEx, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSetCTCLossDescriptor_v9, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSetConvolutionGroupCount,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSetConvolutionMathType, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSetConvolutionNdDescriptor,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSetDropoutDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSetFilterNdDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSetPooling2dDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSetRNNDataDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSetRNNDescriptor_v8, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSetSpatialTransformerNdDescriptor,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSetStream, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSetTensorNdDescriptor, CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSpatialTfGridGeneratorBackward,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSpatialTfGridGeneratorForward,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSpatialTfSamplerBackward,
	CUDNN_STATUS_NOT_SUPPORTED)
MT_STUB(cudnnStatus_t, cudnnSpatialTfSamplerForward, CUDNN_STATUS_NOT_SUPPORTED)

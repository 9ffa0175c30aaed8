// backendsel.cpp: the backend=auto|cuda|cpu choice shared by the elements, and opening it
#include "gst/backendsel.h"

#include <string>

#if GVC_CUDAMV_CUDA
#include "gpu/backend.h"
#include "gst/cudactx.h"
#endif

GType
gvc_backend_choice_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GVC_BACKEND_AUTO, "CUDA when a device is present, else the CPU", "auto"},
    {GVC_BACKEND_CUDA, "CUDA (fails to start without a device)", "cuda"},
    {GVC_BACKEND_CPU, "CPU reference implementation", "cpu"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GvcBackendChoice", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

#if GVC_CUDAMV_CUDA
/* The CUDA backend in the pipeline's context, or nullptr and the reason in @why. */
static std::unique_ptr<gvc::Backend>
open_cuda (GstElement * element, gint device_id, GstCudaContext ** context,
    std::string & why)
{
  std::unique_ptr<gvc::Backend> backend;

  /* libgstcuda asserts when the driver library is missing: look for it first. */
  if (!gst_cuda_load_library ()) {
    why = "the CUDA driver library (libcuda.so.1) was not found";
    return nullptr;
  }
  if (!gst_cuda_ensure_element_context (element, device_id, context)) {
    why = device_id < 0 ? std::string ("no CUDA device or driver was found") :
        "CUDA device " + std::to_string (device_id) +
        " could not be opened (no such device, or no driver)";
    return nullptr;
  }
  {
    GvcCudaContextGuard guard (*context);
    gvc::Status status;

    if (!guard.ok ()) {
      why = "the CUDA context could not be made current";
    } else {
      backend = gvc::make_cuda_backend (gvc_cuda_context_device_id (*context),
          &status);
      if (!backend)
        why = status.message ();
    }
  }
  if (!backend)
    gst_clear_object (context);
  return backend;
}
#endif

std::unique_ptr<gvc::Backend>
gvc_backend_open (GstElement * element, GvcBackendChoice choice,
    gint device_id, GstObject ** cuda_context)
{
  GstElementFactory *factory = gst_element_get_factory (element);
  const gchar *name = factory ?
      gst_plugin_feature_get_name (GST_PLUGIN_FEATURE (factory)) :
      GST_ELEMENT_NAME (element);
  std::unique_ptr<gvc::Backend> backend;
  std::string why;

  if (choice == GVC_BACKEND_CPU)
    return gvc::make_cpu_backend ();

#if GVC_CUDAMV_CUDA
  if (cuda_context)
    backend = open_cuda (element, device_id,
        reinterpret_cast < GstCudaContext ** >(cuda_context), why);
  else
    why = "the element has no CUDA context to share";
#else
  (void) device_id;
  (void) cuda_context;
  why = "this build has no CUDA support";
#endif

  if (backend)
    return backend;
  if (choice == GVC_BACKEND_CUDA) {
    GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND,
        ("%s cannot use CUDA (backend=cuda): %s.", name, why.c_str ()),
        ("Use backend=auto or backend=cpu to run on the CPU."));
    return nullptr;
  }
  GST_INFO_OBJECT (element, "No CUDA (%s): using the CPU backend", why.c_str ());
  g_message ("%s: no CUDA (%s), falling back to the CPU backend", name,
      why.c_str ());
  return gvc::make_cpu_backend ();
}

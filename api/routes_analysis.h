/* routes_analysis.h: the web UI's analysis reads (api/routes_analysis.c): slice,
 * contour, ECDF of the final metric and the early-stopping curves (api/analysis.h).
 * routes.c puts ANALYSIS_ROUTES in its table. */
#ifndef TRIALQ_ROUTES_ANALYSIS_H
#define TRIALQ_ROUTES_ANALYSIS_H

#include "api/routes.h"

void h_webui_slice(struct req *q);
void h_webui_contour(struct req *q);
void h_webui_ecdf(struct req *q);
void h_webui_curves(struct req *q);

#define ANALYSIS_ROUTES                                                 \
    {EVHTTP_REQ_GET, API_PREFIX "/webui/slice", 0, h_webui_slice, 0},     \
        {EVHTTP_REQ_GET, API_PREFIX "/webui/contour", 0, h_webui_contour, 0}, \
        {EVHTTP_REQ_GET, API_PREFIX "/webui/ecdf", 0, h_webui_ecdf, 0},   \
        {EVHTTP_REQ_GET, API_PREFIX "/webui/curves", 0, h_webui_curves, 0}

#endif

//! The one macro that stamps out tuple impls (arity 0 to 16) for query
//! data and filters. Each element comes as (type, fetch name, state name, archetype state name).

macro_rules! all_query_tuples {
    ($m:ident) => {
        $m!();
        $m!((Q0, f0, s0, a0));
        $m!((Q0, f0, s0, a0), (Q1, f1, s1, a1));
        $m!((Q0, f0, s0, a0), (Q1, f1, s1, a1), (Q2, f2, s2, a2));
        $m!(
            (Q0, f0, s0, a0),
            (Q1, f1, s1, a1),
            (Q2, f2, s2, a2),
            (Q3, f3, s3, a3)
        );
        $m!(
            (Q0, f0, s0, a0),
            (Q1, f1, s1, a1),
            (Q2, f2, s2, a2),
            (Q3, f3, s3, a3),
            (Q4, f4, s4, a4)
        );
        $m!(
            (Q0, f0, s0, a0),
            (Q1, f1, s1, a1),
            (Q2, f2, s2, a2),
            (Q3, f3, s3, a3),
            (Q4, f4, s4, a4),
            (Q5, f5, s5, a5)
        );
        $m!(
            (Q0, f0, s0, a0),
            (Q1, f1, s1, a1),
            (Q2, f2, s2, a2),
            (Q3, f3, s3, a3),
            (Q4, f4, s4, a4),
            (Q5, f5, s5, a5),
            (Q6, f6, s6, a6)
        );
        $m!(
            (Q0, f0, s0, a0),
            (Q1, f1, s1, a1),
            (Q2, f2, s2, a2),
            (Q3, f3, s3, a3),
            (Q4, f4, s4, a4),
            (Q5, f5, s5, a5),
            (Q6, f6, s6, a6),
            (Q7, f7, s7, a7)
        );
        $m!(
            (Q0, f0, s0, a0),
            (Q1, f1, s1, a1),
            (Q2, f2, s2, a2),
            (Q3, f3, s3, a3),
            (Q4, f4, s4, a4),
            (Q5, f5, s5, a5),
            (Q6, f6, s6, a6),
            (Q7, f7, s7, a7),
            (Q8, f8, s8, a8)
        );
        $m!(
            (Q0, f0, s0, a0),
            (Q1, f1, s1, a1),
            (Q2, f2, s2, a2),
            (Q3, f3, s3, a3),
            (Q4, f4, s4, a4),
            (Q5, f5, s5, a5),
            (Q6, f6, s6, a6),
            (Q7, f7, s7, a7),
            (Q8, f8, s8, a8),
            (Q9, f9, s9, a9)
        );
        $m!(
            (Q0, f0, s0, a0),
            (Q1, f1, s1, a1),
            (Q2, f2, s2, a2),
            (Q3, f3, s3, a3),
            (Q4, f4, s4, a4),
            (Q5, f5, s5, a5),
            (Q6, f6, s6, a6),
            (Q7, f7, s7, a7),
            (Q8, f8, s8, a8),
            (Q9, f9, s9, a9),
            (Q10, f10, s10, a10)
        );
        $m!(
            (Q0, f0, s0, a0),
            (Q1, f1, s1, a1),
            (Q2, f2, s2, a2),
            (Q3, f3, s3, a3),
            (Q4, f4, s4, a4),
            (Q5, f5, s5, a5),
            (Q6, f6, s6, a6),
            (Q7, f7, s7, a7),
            (Q8, f8, s8, a8),
            (Q9, f9, s9, a9),
            (Q10, f10, s10, a10),
            (Q11, f11, s11, a11)
        );
        $m!(
            (Q0, f0, s0, a0),
            (Q1, f1, s1, a1),
            (Q2, f2, s2, a2),
            (Q3, f3, s3, a3),
            (Q4, f4, s4, a4),
            (Q5, f5, s5, a5),
            (Q6, f6, s6, a6),
            (Q7, f7, s7, a7),
            (Q8, f8, s8, a8),
            (Q9, f9, s9, a9),
            (Q10, f10, s10, a10),
            (Q11, f11, s11, a11),
            (Q12, f12, s12, a12)
        );
        $m!(
            (Q0, f0, s0, a0),
            (Q1, f1, s1, a1),
            (Q2, f2, s2, a2),
            (Q3, f3, s3, a3),
            (Q4, f4, s4, a4),
            (Q5, f5, s5, a5),
            (Q6, f6, s6, a6),
            (Q7, f7, s7, a7),
            (Q8, f8, s8, a8),
            (Q9, f9, s9, a9),
            (Q10, f10, s10, a10),
            (Q11, f11, s11, a11),
            (Q12, f12, s12, a12),
            (Q13, f13, s13, a13)
        );
        $m!(
            (Q0, f0, s0, a0),
            (Q1, f1, s1, a1),
            (Q2, f2, s2, a2),
            (Q3, f3, s3, a3),
            (Q4, f4, s4, a4),
            (Q5, f5, s5, a5),
            (Q6, f6, s6, a6),
            (Q7, f7, s7, a7),
            (Q8, f8, s8, a8),
            (Q9, f9, s9, a9),
            (Q10, f10, s10, a10),
            (Q11, f11, s11, a11),
            (Q12, f12, s12, a12),
            (Q13, f13, s13, a13),
            (Q14, f14, s14, a14)
        );
        $m!(
            (Q0, f0, s0, a0),
            (Q1, f1, s1, a1),
            (Q2, f2, s2, a2),
            (Q3, f3, s3, a3),
            (Q4, f4, s4, a4),
            (Q5, f5, s5, a5),
            (Q6, f6, s6, a6),
            (Q7, f7, s7, a7),
            (Q8, f8, s8, a8),
            (Q9, f9, s9, a9),
            (Q10, f10, s10, a10),
            (Q11, f11, s11, a11),
            (Q12, f12, s12, a12),
            (Q13, f13, s13, a13),
            (Q14, f14, s14, a14),
            (Q15, f15, s15, a15)
        );
    };
}
pub(crate) use all_query_tuples;
